// contract.conversations over HTTP (server/messages/conversations.ts does the work).
import { finished } from "node:stream";
import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import type { Conversations } from "./conversations.js";
import type { Accepted } from "./send.js";

const s = initServer();

export function conversationsRouter(conversations: Conversations) {
  const accepted = (a: Accepted, res: import("express").Response) => {
    if (a.replayed) res.setHeader("Idempotent-Replayed", "true");
    return { status: 202 as const, body: a.body };
  };
  return s.router(contract.conversations, {
    listChats: async ({ params, query, res }) => {
      return { status: 200, body: await conversations.listChats(principalOf(res).workspaceId, params.connection, query) };
    },
    reply: async ({ params, body, headers, res }) => {
      const a = await conversations.reply(principalOf(res), params.id, body, { idempotencyKey: headers["idempotency-key"] });
      return accepted(a, res);
    },
    poll: async ({ body, headers, res }) => {
      const a = await conversations.poll(principalOf(res), body, { idempotencyKey: headers["idempotency-key"] });
      return accepted(a, res);
    },
    react: async ({ params, body, res }) => {
      return { status: 202, body: await conversations.react(principalOf(res).workspaceId, params.id, body.emoji) };
    },
    edit: async ({ params, body, res }) => {
      return { status: 202, body: await conversations.edit(principalOf(res).workspaceId, params.id, body) };
    },
    revoke: async ({ params, res }) => {
      return { status: 202, body: await conversations.revoke(principalOf(res).workspaceId, params.id) };
    },
    markRead: async ({ params, res }) => {
      return { status: 200, body: await conversations.markRead(principalOf(res).workspaceId, params.id) };
    },
    presence: async ({ params, body, res }) => {
      await conversations.presence(principalOf(res).workspaceId, params.connection, params.chat, body.state);
      return { status: 204, body: undefined };
    },
    media: async ({ params, req, res }) => {
      const media = await conversations.media(principalOf(res).workspaceId, params.id);
      res.setHeader("content-type", media.mimetype);
      res.setHeader("content-disposition", contentDisposition(media.filename ?? "media"));
      res.setHeader("cache-control", "no-store");
      if (media.size !== null) res.setHeader("content-length", String(media.size));
      // Streamed as it arrives, never held whole or written to disk. A client that goes away stops
      // the fetch; a fetch that fails half-way (past the size cap, the network broke off) cuts the
      // response, so the client sees a broken download rather than a file that merely looks whole.
      finished(res, () => media.stream.destroy());
      media.stream.once("error", (err) => {
        req.log?.warn({ err, message_id: params.id }, "media download failed while streaming");
        res.destroy();
      });
      return { status: 200, body: media.stream as unknown as string };
    },
  });
}

/** `attachment` with the file name, ASCII-safe and RFC 5987-encoded for the rest. */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7E]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
