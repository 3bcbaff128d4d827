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
    send: async ({ body, headers, res, req }) => {
      const accepted = await sender.send(principalOf(res), body, { idempotencyKey: headers["idempotency-key"] });
      if (accepted.replayed) {
        res.setHeader("Idempotent-Replayed", "true");
      } else if (accepted.scheduledFor) {
        // Committed already; if the job cannot be created now, the minute sweep releases it.
        await messageLifecycle
          .scheduleRelease(accepted.body.id, accepted.scheduledFor)
          .catch((err: unknown) => req.log?.warn({ err, message_id: accepted.body.id }, "release job not created; the sweep will release it"));
      } else {
        ctx.dispatcher.wake();
      }
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
