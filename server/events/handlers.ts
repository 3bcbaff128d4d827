import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { AppContext } from "../context.js";
import { cursorKey } from "../http/cursor.js";
import { principalOf } from "../http/principal.js";
import { listEvents } from "./replay.js";

const s = initServer();

export function eventsRouter(ctx: AppContext) {
  const key = cursorKey(ctx.config.secretKey);
  return s.router(contract.events, {
    list: async ({ query, res }) => ({ status: 200, body: await listEvents(ctx.db, key, principalOf(res).workspaceId, query) }),
  });
}
