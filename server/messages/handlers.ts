import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import type { MessageLifecycle } from "./lifecycle.js";
import { readHandlers } from "./read-handlers.js";
import type { MessageReader } from "./reader.js";
import type { MessageSender } from "./send.js";

const s = initServer();

export function messagesRouter({ sender, lifecycle, reader }: { sender: MessageSender; lifecycle: MessageLifecycle; reader: MessageReader }) {
  return s.router(contract.messages, {
    ...readHandlers(reader),
    send: async ({ body, headers, res }) => {
      const accepted = await sender.sendOrThrow(principalOf(res), body, { idempotencyKey: headers["idempotency-key"] });
      if (accepted.replayed) res.setHeader("Idempotent-Replayed", "true");
      return { status: 202, body: accepted.body };
    },
    cancel: async ({ params, res }) => {
      return { status: 200, body: await lifecycle.cancel(principalOf(res).workspaceId, params.id) };
    },
    reschedule: async ({ params, body, res }) => {
      return { status: 200, body: await lifecycle.reschedule(principalOf(res).workspaceId, params.id, body) };
    },
  });
}
