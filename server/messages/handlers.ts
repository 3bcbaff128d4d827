import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { AppContext } from "../context.js";
import { principalOf } from "../http/principal.js";
import { readHandlers } from "./read-handlers.js";

const s = initServer();

export function messagesRouter(ctx: AppContext) {
  const { sender, messageLifecycle } = ctx.services;
  return s.router(contract.messages, {
    ...readHandlers(ctx),
    send: async ({ body, headers, res }) => {
      const accepted = await sender.sendOrThrow(principalOf(res), body, { idempotencyKey: headers["idempotency-key"] });
      if (accepted.replayed) res.setHeader("Idempotent-Replayed", "true");
      return { status: 202, body: accepted.body };
    },
    cancel: async ({ params, res }) => {
      return { status: 200, body: await messageLifecycle.cancel(principalOf(res).workspaceId, params.id) };
    },
    reschedule: async ({ params, body, res }) => {
      return { status: 200, body: await messageLifecycle.reschedule(principalOf(res).workspaceId, params.id, body) };
    },
  });
}
