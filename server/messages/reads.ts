// Reading messages: the cursor-paginated list, one message with its timeline (both in the
// contract's shapes, view.ts, scoped to the caller's workspace), and the number check.
//
// Pagination is keyset on (created_at DESC, id DESC), served by messages_workspace_created (or
// messages_connection_created when filtering by connection). The cursor keeps created_at to the
// microsecond: rows created in the same millisecond are neither skipped nor repeated, and ties on
// created_at are broken by id.
import { IsNull, type DataSource } from "typeorm";
import type { ListMessagesQuery, MessagePage, MessageWithTimeline, NumberCheck, NumberCheckQuery } from "../../contract/index.js";
import { Connection } from "../connections/entities.js";
import { engineConnectionFor } from "../connections/service.js";
import type { Config } from "../config.js";
import type { EngineRegistry } from "../engines/engine.js";
import type { Logger } from "../logger.js";
import { MICROSECOND_INSTANT } from "../db/instant.js";
import { decodeCursor, encodeCursor, filterFingerprint, type CursorPosition } from "../http/cursor.js";
import { ApiError } from "../http/errors.js";
import { messageFromRow } from "./store/row.js";
import { messageView, timelineView } from "./view.js";

export interface MessageFilters {
  /** Slug of a live connection of the workspace; a slug that names none matches no message. */
  connection?: string | undefined;
  status?: string | undefined;
  direction?: "inbound" | "outbound" | undefined;
  /** A chat as the chat list names it (the generated `chat` column, chat.ts). */
  chat?: string | undefined;
}

/**
 * The WHERE clause shared by the list and the export: workspace, filters and, when given, the
 * keyset position (rows strictly older than it). `m` is messages, parameters start at $1.
 */
export function messageFilterSql(workspaceId: string, filters: MessageFilters, before?: CursorPosition): { where: string; params: unknown[] } {
  const params: unknown[] = [workspaceId];
  const clauses = ["m.workspace_id = $1"];
  if (filters.connection !== undefined) {
    params.push(filters.connection);
    // A slug is unique among live connections only; a deleted connection's slug may be reused.
    clauses.push(`m.connection_id = (SELECT id FROM connections WHERE workspace_id = $1 AND slug = $${params.length} AND deleted_at IS NULL)`);
  }
  if (filters.status !== undefined) {
    params.push(filters.status);
    clauses.push(`m.status = $${params.length}`);
  }
  if (filters.direction !== undefined) {
    params.push(filters.direction);
    clauses.push(`m.direction = $${params.length}`);
  }
  if (filters.chat !== undefined) {
    params.push(filters.chat);
    clauses.push(`m.chat = $${params.length}`);
  }
  if (before) {
    params.push(before.created_at, before.id);
    clauses.push(`(m.created_at, m.id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  return { where: clauses.join(" AND "), params };
}

/** One page of the workspace's messages, newest first. `key` signs cursors (cursorKey()). */
export async function listMessages(db: DataSource, key: Buffer, workspaceId: string, query: ListMessagesQuery): Promise<MessagePage> {
  const filters: MessageFilters = { connection: query.connection, status: query.status, direction: query.direction, chat: query.chat };
  const fingerprint = filterFingerprint(`messages:${workspaceId}`, { ...filters });
  const before = query.cursor !== undefined ? decodeCursor(key, query.cursor, fingerprint) : undefined;
  const { where, params } = messageFilterSql(workspaceId, filters, before);
  params.push(query.limit + 1);
  const rows: Record<string, unknown>[] = await db.query(
    `SELECT m.*, c.slug AS connection_slug, c.phone AS connection_phone, to_char(m.created_at AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS position_created_at
       FROM messages m JOIN connections c ON c.id = m.connection_id
      WHERE ${where}
      ORDER BY m.created_at DESC, m.id DESC
      LIMIT $${params.length}`,
    params,
  );
  const pageRows = rows.slice(0, query.limit);
  const last = pageRows[pageRows.length - 1];
  const nextCursor =
    rows.length > query.limit && last
      ? encodeCursor(key, { created_at: last.position_created_at as string, id: last.id as string }, fingerprint)
      : null;
  return { data: pageRows.map(rowView), next_cursor: nextCursor };
}

/**
 * The statuses a message accepted over the API (or fired by a schedule) is written with. Its
 * `accepted` entry is its row's created_at and is not written a second time (docs/decisions.md,
 * "Acceptance is the message's row"): a timeline whose first stored entry is one of these begins
 * with it. Every other first entry is the whole story: `scheduled` (a deferred send, which is
 * never `accepted`), `sent` (written on the linked phone), `delivered` (inbound), or `accepted`
 * itself (stored by earlier versions).
 */
const ACCEPTED_AS: readonly string[] = ["queued", "failed"];

type StoredEntry = { status: MessageWithTimeline["status"]; at: Date; detail: string | null };

/** One message of the workspace with its timeline, oldest entry first; 404 otherwise. */
export async function getMessage(db: DataSource, workspaceId: string, id: string): Promise<MessageWithTimeline> {
  const [row]: Record<string, unknown>[] = await db.query(
    `SELECT m.*, c.slug AS connection_slug, c.phone AS connection_phone FROM messages m JOIN connections c ON c.id = m.connection_id
      WHERE m.id = $1 AND m.workspace_id = $2`,
    [id, workspaceId],
  );
  if (!row) throw ApiError.notFound("message");
  const stored: StoredEntry[] = await db.query(`SELECT status, at, detail FROM message_timeline_in_order WHERE message_id = $1 ORDER BY id`, [id]);
  const accepted = row.direction === "outbound" && ACCEPTED_AS.includes(stored[0]?.status ?? "");
  const timeline = accepted ? [{ status: "accepted", at: row.created_at as Date, detail: null } satisfies StoredEntry, ...stored] : stored;
  return { ...rowView(row), timeline: timeline.map(timelineView) };
}

/** A message row joined with its connection's slug and number → the contract shape. */
function rowView(row: Record<string, unknown>) {
  return messageView(messageFromRow(row), row.connection_slug as string, (row.connection_phone as string | null) ?? null);
}

/** How long a number check may take before the answer is "cannot say". */
export const NUMBER_CHECK_TIMEOUT_MS = 10_000;

/**
 * Whether `phone` is on the network, asked through the connection's engine. 404 for a slug that
 * names no live connection of the workspace; `checked: false` whenever the engine cannot say:
 * no such engine, the connection is not connected, the engine fails or is too slow.
 */
export async function checkNumber(
  ctx: { db: DataSource; engines: EngineRegistry; config: Config; logger: Logger },
  workspaceId: string,
  input: NumberCheckQuery,
): Promise<NumberCheck> {
  const connection = await ctx.db.getRepository(Connection).findOneBy({ workspaceId, slug: input.connection, deletedAt: IsNull() });
  if (!connection) throw ApiError.notFound("connection");
  const cannotSay: NumberCheck = { phone: input.phone, checked: false, on_network: null };
  const engine = ctx.engines.get(connection.transport);
  if (!engine || connection.state !== "connected") return cannotSay;
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = await Promise.race([
      engine.checkNumber(engineConnectionFor(ctx.config, connection), input.phone),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${NUMBER_CHECK_TIMEOUT_MS} ms`)), NUMBER_CHECK_TIMEOUT_MS);
      }),
    ]);
    if (!answer.checked || answer.onNetwork === null) return cannotSay;
    return { phone: input.phone, checked: true, on_network: answer.onNetwork };
  } catch (err) {
    // The number itself is personal data: not logged.
    ctx.logger.warn({ err, connection_id: connection.id, engine: engine.name }, "number check failed; answering checked: false");
    return cannotSay;
  } finally {
    clearTimeout(timer);
  }
}
