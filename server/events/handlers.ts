import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import type { EventReplay } from "./replay.js";

const s = initServer();

export function eventsRouter(events: EventReplay) {
  return s.router(contract.events, {
    list: async ({ query, res }) => ({ status: 200, body: await events.list(principalOf(res).workspaceId, query) }),
  });
}
