// Conversations (docs/conversations.md): a connection's chats, and what is done in a chat
// besides sending. A reply and a poll are sends (send.ts: the same rules, durability and
// Idempotency-Key); a reaction, an edit, a revoke, a read and a presence go to the engine at once
// and, once it took them, are written on the message. The workspace always comes from the credential.
import { IsNull, type DataSource } from "typeorm";
import {
  EDIT_WINDOW_MINUTES,
  REVOKE_WINDOW_HOURS,
  type ActionAccepted,
  type ChatPage,
  type EditBody,
  type ListChatsQuery,
  type PollBody,
  type PresenceState,
  type ReadReceipt,
  type ReplyBody,
} from "../../contract/index.js";
import type { Config } from "../config.js";
import { Connection } from "../connections/entities.js";
import { engineConnectionFor } from "../connections/service.js";
import { MICROSECOND_INSTANT } from "../db/instant.js";
import { rows } from "../db/rows.js";
import { EngineError, type Engine, type EngineConnection, type EngineRegistry, type MediaDownload, type MessageRef } from "../engines/engine.js";
import { cursorKey, decodeCursor, encodeCursor, filterFingerprint } from "../http/cursor.js";
import { ApiError } from "../http/errors.js";
import { chatOf, chatRecipient, messageRef } from "./chat.js";
import type { Message } from "./entities.js";
import type { Accepted, MessageSender, SendAs, SendOptions } from "./send.js";
import { messageFromRow } from "./store/row.js";
import { messageView } from "./view.js";

/** Our own reactions are kept under this reactor (contacts' under their address). */
const OURS = "me";

export interface ConversationDeps {
  db: DataSource;
  config: Pick<Config, "baseUrl" | "secretKey" | "mediaMaxBytes">;
  engines: EngineRegistry;
  sender: MessageSender;
}

/** One message of the workspace with its connection. */
export interface Found {
  message: Message;
  connection: Connection;
}

/** The engine methods a conversation action needs. */
type Action = "react" | "edit" | "revoke" | "markRead" | "sendPresence" | "downloadMedia";

export class Conversations {
  private readonly cursorKey: Buffer;

  constructor(private readonly deps: ConversationDeps) {
    this.cursorKey = cursorKey(deps.config.secretKey);
  }

  /** The chats of a connection, newest last message first, with their unread inbound counts. */
  async listChats(workspaceId: string, slug: string, query: ListChatsQuery): Promise<ChatPage> {
    const connection = await this.connection(workspaceId, slug);
    const fingerprint = filterFingerprint(`chats:${workspaceId}`, { connection: connection.id });
    const before = query.cursor !== undefined ? decodeCursor(this.cursorKey, query.cursor, fingerprint) : undefined;
    const found = await rows<{ chat: string; id: string; direction: "inbound" | "outbound"; status: string; created_at: Date; position: string; unread: number }>(
      this.deps.db,
      `WITH last AS (
         SELECT DISTINCT ON (m.chat) m.chat, m.id, m.direction, m.status, m.created_at,
                to_char(m.created_at AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS position
           FROM messages m WHERE m.connection_id = $1 AND m.chat IS NOT NULL
          ORDER BY m.chat, m.created_at DESC, m.id DESC
       )
       SELECT last.*, (SELECT count(*) FROM messages u
                        WHERE u.connection_id = $1 AND u.chat = last.chat AND u.direction = 'inbound' AND u.read_at IS NULL)::int AS unread
         FROM last
        WHERE $2::timestamptz IS NULL OR (last.created_at, last.id) < ($2::timestamptz, $3)
        ORDER BY last.created_at DESC, last.id DESC
        LIMIT $4`,
      [connection.id, before?.created_at ?? null, before?.id ?? null, query.limit + 1],
    );
    const page = found.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      data: page.map((r) => ({
        object: "chat" as const,
        chat: r.chat,
        connection: connection.slug,
        last_message: { id: r.id, direction: r.direction, status: r.status as ChatPage["data"][number]["last_message"]["status"], at: new Date(r.created_at).toISOString() },
        unread_count: r.unread,
      })),
      next_cursor: found.length > query.limit && last ? encodeCursor(this.cursorKey, { created_at: last.position, id: last.id }, fingerprint) : null,
    };
  }

  /** A reply quoting `id`, in its chat on its connection: a send (409 while `id` has no network id). */
  async reply(principal: SendAs, id: string, body: ReplyBody, options: Pick<SendOptions, "idempotencyKey">): Promise<Accepted> {
    const { message, connection } = await this.find(principal.workspaceId, id);
    if (!message.providerMessageId) throw ApiError.invalidState("The message has no network id yet (it has not been handed to the network): it cannot be quoted.");
    const to = chatRecipient(chatOf(message));
    return this.deps.sender.sendOrThrow(principal, { ...body, connection: connection.slug, to }, { ...options, replyTo: message.id });
  }

  /** A poll: a send whose content is the poll. */
  async poll(principal: SendAs, body: PollBody, options: Pick<SendOptions, "idempotencyKey">): Promise<Accepted> {
    const { question, options: names, selectable, ...send } = body;
    return this.deps.sender.sendOrThrow(principal, send, { ...options, poll: { question, options: names, selectable } });
  }

  /** Our reaction to a message ("" removes it). */
  async react(workspaceId: string, id: string, emoji: string): Promise<ActionAccepted> {
    if (emoji !== "" && !isOneEmoji(emoji)) throw ApiError.validation([{ path: "emoji", message: 'must be one emoji, or "" to remove our reaction' }]);
    const found = await this.find(workspaceId, id);
    const target = this.target(found, "reacted to");
    await this.call(found.connection, "react", (engine, c) => engine.react!(c, target, emoji));
    const updated = await this.update(
      found,
      `reactions = CASE WHEN $2 = '' THEN COALESCE(reactions, '{}') - '${OURS}' ELSE COALESCE(reactions, '{}') || jsonb_build_object('${OURS}', $2::text) END`,
      [emoji],
    );
    return { object: "message_action", action: "reaction", message: updated };
  }

  /** A new text for our own text message, within the edit window. */
  async edit(workspaceId: string, id: string, body: EditBody): Promise<ActionAccepted> {
    const found = await this.find(workspaceId, id);
    const { message } = found;
    if (message.direction !== "outbound" || message.body === null || message.media || message.location || message.poll) {
      throw ApiError.invalidState("Only a text message we sent can be edited.");
    }
    const target = this.target(found, "edited");
    if (message.revokedAt) throw ApiError.invalidState("The message was deleted for everyone: it cannot be edited.");
    await this.withinWindow(message, EDIT_WINDOW_MINUTES * 60_000, `the network's edit window of ${EDIT_WINDOW_MINUTES} minutes`);
    await this.call(found.connection, "edit", (engine, c) => engine.edit!(c, target, body.body));
    const updated = await this.update(found, `body = $2, edited_at = now()`, [body.body]);
    return { object: "message_action", action: "edit", message: updated };
  }

  /** Deletes our own message for everyone, within the network's window; the record stays. */
  async revoke(workspaceId: string, id: string): Promise<ActionAccepted> {
    const found = await this.find(workspaceId, id);
    const { message } = found;
    if (message.direction !== "outbound") throw ApiError.invalidState("Only a message we sent can be deleted for everyone.");
    const target = this.target(found, "deleted");
    if (message.revokedAt) throw ApiError.invalidState("The message was deleted for everyone already.");
    await this.withinWindow(message, REVOKE_WINDOW_HOURS * 3_600_000, `the network's window of ${REVOKE_WINDOW_HOURS} hours for deleting for everyone`);
    await this.call(found.connection, "revoke", (engine, c) => engine.revoke!(c, target));
    const updated = await this.update(found, `revoked_at = now()`, []);
    return { object: "message_action", action: "revoke", message: updated };
  }

  /** Marks the message's chat read up to it: it (when inbound) and the earlier unread inbound messages. */
  async markRead(workspaceId: string, id: string): Promise<ReadReceipt> {
    const { message, connection, chat, unread } = await this.unreadUpTo(workspaceId, id);
    const refs = unread.map(messageRef).filter((r): r is MessageRef => r !== null);
    if (refs.length) await this.call(connection, "markRead", (engine, c) => engine.markRead!(c, refs));
    const marked = unread.length
      ? await rows(this.deps.db, `UPDATE messages SET read_at = now() WHERE id = ANY($1) AND read_at IS NULL RETURNING id`, [unread.map((m) => m.id)])
      : [];
    return { object: "read_receipt", message_id: message.id, chat, marked: marked.length };
  }

  /** The message, its chat and the chat's unread inbound messages up to it, oldest first (changes nothing). */
  async unreadUpTo(workspaceId: string, id: string): Promise<Found & { chat: string; unread: Message[] }> {
    const { message, connection } = await this.find(workspaceId, id);
    const chat = chatOf(message);
    const unread = (
      await rows(
        this.deps.db,
        `SELECT * FROM messages
          WHERE connection_id = $1 AND chat = $2 AND direction = 'inbound' AND read_at IS NULL
            AND (created_at, id) <= ($3::timestamptz, $4)
          ORDER BY created_at, id`,
        [connection.id, chat, message.createdAt, message.id],
      )
    ).map(messageFromRow);
    return { message, connection, chat, unread };
  }

  /** Shows typing or recording in a chat of a connection (409 when it is not connected). */
  async presence(workspaceId: string, slug: string, chat: string, state: PresenceState): Promise<void> {
    const connection = await this.connection(workspaceId, slug);
    await this.call(connection, "sendPresence", (engine, c) => engine.sendPresence!(c, chatRecipient(chat), state));
  }

  /** A message's media, opened through its engine; the caller streams it. */
  async media(workspaceId: string, id: string): Promise<MediaDownload> {
    const { message, connection } = await this.find(workspaceId, id);
    if (!message.media) throw ApiError.notFound("media (the message has none)");
    // An outbound message not yet handed off is addressed by our id alone: the sandbox fetches its URL.
    const target: MessageRef = messageRef(message) ?? { messageId: message.id, providerMessageId: "", chat: chatRecipient(chatOf(message)), fromMe: true, sender: null };
    const media = message.media;
    try {
      return await this.call(connection, "downloadMedia", (engine, c) => engine.downloadMedia!(c, target, media, this.deps.config.mediaMaxBytes));
    } catch (err) {
      if (err instanceof EngineError && err.code === "media_gone") throw new ApiError("gone", "The network no longer has this media.");
      if (err instanceof EngineError && err.code === "media_too_large") throw new ApiError("media_too_large", `${err.message} (MEDIA_MAX_BYTES).`);
      throw err;
    }
  }

  private async connection(workspaceId: string, slug: string): Promise<Connection> {
    const connection = await this.deps.db.getRepository(Connection).findOneBy({ workspaceId, slug, deletedAt: IsNull() });
    if (!connection) throw ApiError.notFound("connection");
    return connection;
  }

  /** One message of the workspace with its connection; 404 otherwise. */
  async find(workspaceId: string, id: string): Promise<Found> {
    const [row] = await rows(this.deps.db, `SELECT * FROM messages WHERE id = $1 AND workspace_id = $2`, [id, workspaceId]);
    if (!row) throw ApiError.notFound("message");
    const message = messageFromRow(row);
    const connection = await this.deps.db.getRepository(Connection).findOneBy({ id: message.connectionId });
    if (!connection || connection.deletedAt) throw ApiError.notFound("message");
    return { message, connection };
  }

  /** The message as the engine addresses it; 409 while it has no network id. */
  private target({ message }: Found, what: string): MessageRef {
    const ref = messageRef(message);
    if (!ref) throw ApiError.invalidState(`The message has no network id yet (it has not been handed to the network): it cannot be ${what}.`);
    return ref;
  }

  /** 409 naming the window once `windowMs` has passed since the network took the message. */
  private async withinWindow(message: Message, windowMs: number, window: string): Promise<void> {
    const [taken] = await rows<{ at: Date | null }>(
      this.deps.db,
      `SELECT min(at) AS at FROM message_timeline_in_order WHERE message_id = $1 AND status IN ('submitted', 'sent')`,
      [message.id],
    );
    const since = taken?.at ? new Date(taken.at) : message.createdAt;
    if (Date.now() - since.getTime() > windowMs) throw ApiError.invalidState(`The message is past ${window}.`);
  }

  /** Calls the connection's engine: 409 when it is not connected or cannot do this. */
  private async call<T>(connection: Connection, action: Action, run: (engine: Engine, target: EngineConnection) => Promise<T>): Promise<T> {
    if (connection.state !== "connected") throw new ApiError("connection_not_ready", `The connection ${connection.slug} is ${connection.state}.`);
    const engine = this.deps.engines.get(connection.transport);
    if (!engine) throw new ApiError("transport_unavailable", `No engine ${connection.transport} is configured.`);
    if (!engine[action]) throw ApiError.invalidState(`The ${engine.name} engine cannot do this.`);
    try {
      return await run(engine, engineConnectionFor(this.deps.config, connection));
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      if (err.code === "media_gone" || err.code === "media_too_large") throw err;
      // The session is not up right now, or the network refused: the caller may retry later.
      if (err.permanent) throw ApiError.invalidState(`The network refused it: ${err.message}`);
      throw new ApiError("connection_not_ready", `The connection ${connection.slug} cannot reach the network now: ${err.message}`, { retryAfter: 5 });
    }
  }

  private async update(found: Found, set: string, params: unknown[]) {
    const [row] = await rows(this.deps.db, `UPDATE messages SET ${set}, updated_at = now() WHERE id = $1 RETURNING *`, [found.message.id, ...params]);
    return messageView(messageFromRow(row!), found.connection.slug, found.connection.phone);
  }
}

/**
 * Whether `s` is one emoji: a single grapheme that is pictographic (with its modifiers, joiners
 * and variation selectors), a flag (two regional indicators) or a keycap.
 */
export function isOneEmoji(s: string): boolean {
  const graphemes = [...new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(s)];
  if (graphemes.length !== 1) return false;
  return /^(?:\p{Extended_Pictographic}|\p{Regional_Indicator}{2}|[0-9#*]\uFE0F?\u20E3)/u.test(s);
}
