// What the sandbox network does with the gateway's conversation actions (docs/conversations.md):
// it records each one (a reaction, an edit, a revoke, a read, a presence) as the network having got it, listed by GET /sandbox/v1/received beside the messages, and it
// serves a message's media from the URL where the network keeps it.
import type { DataSource } from "typeorm";
import type { Media, PresenceState, Recipient } from "../../../contract/index.js";
import { rows } from "../../db/rows.js";
import type { UrlCheckOptions } from "../../outbound/address-policy.js";
import { EngineError, type EngineConnection, type MediaDownload, type MessageRef } from "../engine.js";
import { openMedia } from "../media-fetch.js";

export type SandboxActionKind = "reaction" | "edit" | "revoke" | "read" | "presence";

export interface SandboxAction {
  kind: SandboxActionKind;
  /** The chat the action concerns. */
  chat: Recipient;
  /** Our id of the message acted on (none for a presence). */
  messageId: string | null;
  detail: Record<string, unknown>;
}

/** How long the sandbox waits for a media server's answer (and then between two chunks). */
const MEDIA_TIMEOUT_MS = 30_000;

/** The phone or group id a chat is addressed as on the network. */
export function recipientAddress(to: Recipient): { address: string; group: boolean } {
  if (typeof to === "string") return { address: to, group: false };
  return "group" in to ? { address: to.group, group: true } : { address: to.phone, group: false };
}

export class SandboxConversations {
  constructor(
    private readonly db: DataSource,
    private readonly mediaPolicy: UrlCheckOptions,
  ) {}

  /** Records actions the network got from a linked, running session; a transient EngineError otherwise. */
  async record(connection: EngineConnection, actions: SandboxAction[]): Promise<void> {
    const [session] = await rows<{ state: string; running: boolean }>(this.db, `SELECT state, running FROM sandbox_sessions WHERE connection_id = $1`, [connection.id]);
    if (session?.state !== "linked" || !session.running) throw new EngineError("the sandbox session is not linked or is stopped", false, "session_not_linked");
    await this.db.query(
      `INSERT INTO sandbox_actions (connection_id, to_address, kind, message_id, detail)
       SELECT $1, a.to_address, a.kind, a.message_id, a.detail FROM jsonb_to_recordset($2::jsonb) AS a(to_address text, kind text, message_id text, detail jsonb)`,
      [
        connection.id,
        JSON.stringify(actions.map((a) => ({ to_address: recipientAddress(a.chat).address, kind: a.kind, message_id: a.messageId, detail: a.detail }))),
      ],
    );
  }

  react(connection: EngineConnection, target: MessageRef, emoji: string): Promise<void> {
    return this.record(connection, [{ kind: "reaction", chat: target.chat, messageId: target.messageId, detail: { emoji } }]);
  }

  edit(connection: EngineConnection, target: MessageRef, body: string): Promise<void> {
    return this.record(connection, [{ kind: "edit", chat: target.chat, messageId: target.messageId, detail: { body } }]);
  }

  revoke(connection: EngineConnection, target: MessageRef): Promise<void> {
    return this.record(connection, [{ kind: "revoke", chat: target.chat, messageId: target.messageId, detail: {} }]);
  }

  markRead(connection: EngineConnection, targets: MessageRef[]): Promise<void> {
    return this.record(connection, targets.map((t) => ({ kind: "read" as const, chat: t.chat, messageId: t.messageId, detail: {} })));
  }

  sendPresence(connection: EngineConnection, chat: Recipient, state: PresenceState): Promise<void> {
    return this.record(connection, [{ kind: "presence", chat, messageId: null, detail: { state } }]);
  }

  /** The network keeps a message's media at its URL: fetched through the outbound address policy, streamed. */
  async downloadMedia(media: Media, maxBytes: number): Promise<MediaDownload> {
    const opened = await openMedia(media.url, this.mediaPolicy, { maxBytes, timeoutMs: MEDIA_TIMEOUT_MS });
    return { stream: opened.stream, mimetype: media.mimetype ?? opened.contentType ?? "application/octet-stream", filename: media.filename ?? null, size: opened.size };
  }
}
