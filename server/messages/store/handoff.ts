// The hand-off's writes: a claimed message is marked submitting, then recorded submitted, retried
// or failed. Each move applies only from the statuses status.ts gives its action, and writes its
// timeline entry (and, for a failure, its event) in the same statement.
import type { DataSource, EntityManager } from "typeorm";
import { connectionColumns } from "../../connections/entities.js";
import { prepared } from "../../db/prepared.js";
import { rows } from "../../db/rows.js";
import { buildEvent, eventParams, eventValues, insertEvents } from "../../events/record.js";
import type { Message } from "../entities.js";
import { sourcesOf, targetOf } from "../status.js";
import { messageView } from "../view.js";
import { messageFromRow } from "./row.js";

/** A claimed message as marked: what the engine needs, and the connection's row (connectionColumns). */
export type Marked = Record<string, unknown> & { m_id: string; attempts: number } & Pick<Message, "recipient" | "body" | "media" | "location" | "poll"> & {
    /** A reply's quoted message (its row's fields as named), or null. */
    quoted: { id: string; direction: Message["direction"]; recipient: Message["recipient"]; sender: string | null; provider_message_id: string | null } | null;
  };

/**
 * Marks claimed messages of one connection `submitting` and reads the connection, in one round
 * trip. A message canceled meanwhile has lost its queue row, and one that moved on is not in
 * markSubmitting's sources: neither comes back. A retried attempt says so in its timeline entry.
 */
export async function markSubmitting(db: DataSource, claims: { messageId: string; attempts: number }[], connectionId: string): Promise<Marked[]> {
  return prepared<Marked>(
    db,
    "handoff-mark-submitting",
    `WITH v AS (
       SELECT * FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS v(id, attempts, n)
     ), m AS (
       UPDATE messages t SET status = $5, updated_at = now()
         FROM v
        WHERE t.id = v.id AND t.status = ANY($4::text[])
          AND EXISTS (SELECT 1 FROM dispatch_queue q WHERE q.message_id = v.id)
        RETURNING t.id, t.recipient, t.body, t.media, t.location, t.poll, t.reply_to, v.attempts, v.n
     ), t AS (
       INSERT INTO message_timeline (message_id, status, detail)
       SELECT id, $5, CASE WHEN attempts > 1 THEN 'attempt ' || attempts END FROM m ORDER BY n
     )
     SELECT ${connectionColumns("c")}, m.id AS m_id, m.attempts, m.recipient, m.body, m.media, m.location, m.poll,
            CASE WHEN q.id IS NOT NULL THEN jsonb_build_object('id', q.id, 'direction', q.direction, 'recipient', q.recipient,
                                                               'sender', q.sender, 'provider_message_id', q.provider_message_id) END AS quoted
       FROM m LEFT JOIN connections c ON c.id = $3 LEFT JOIN messages q ON q.id = m.reply_to
      ORDER BY m.n`,
    [claims.map((c) => c.messageId), claims.map((c) => c.attempts), connectionId, sourcesOf("markSubmitting"), targetOf("markSubmitting")],
  );
}

/** Removes hand-off rows of messages that will not be handed off (canceled or moved on meanwhile). */
export async function dropHandOffs(db: DataSource, messageIds: string[]): Promise<void> {
  await db.query(`DELETE FROM dispatch_queue WHERE message_id = ANY($1)`, [messageIds]);
}

/**
 * The engine took these messages: their provider ids are kept, and those still submitting become
 * submitted (a fast engine may have reported `sent` already: never a move back).
 */
export async function recordSubmitted(db: DataSource, submitted: { id: string; providerMessageId: string }[]): Promise<void> {
  await prepared(
    db,
    "handoff-record-submitted",
    `WITH v AS (
       SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS v(id, provider_message_id, n)
     ), m AS (
       UPDATE messages t SET status = CASE WHEN t.status = ANY($3::text[]) THEN $4 ELSE t.status END,
                             provider_message_id = v.provider_message_id, updated_at = now()
         FROM v WHERE t.id = v.id AND t.provider_message_id IS DISTINCT FROM v.provider_message_id RETURNING t.id, v.n
     ), t AS (
       INSERT INTO message_timeline (message_id, status, detail) SELECT id, $4, NULL FROM m ORDER BY n
     )
     DELETE FROM dispatch_queue WHERE message_id = ANY($1)`,
    [submitted.map((s) => s.id), submitted.map((s) => s.providerMessageId), sourcesOf("recordSubmitted"), targetOf("recordSubmitted")],
  );
}

/** A transient failure: back to the queue, available again after `backoffMs`. */
export async function recordRetry(db: DataSource, messageId: string, backoffMs: number, error: string, detail: string): Promise<void> {
  await db.query(
    `WITH q AS (
       UPDATE dispatch_queue SET available_at = now() + ($2 || ' milliseconds')::interval, locked_until = NULL, last_error = $3
        WHERE message_id = $1
     ), m AS (
       UPDATE messages SET status = $6, updated_at = now() WHERE id = $1 AND status = ANY($5::text[]) RETURNING id
     )
     INSERT INTO message_timeline (message_id, status, detail) SELECT id, $6, $4 FROM m`,
    [messageId, String(Math.round(backoffMs)), error, detail, sourcesOf("recordRetry"), targetOf("recordRetry")],
  );
}

/**
 * A permanent failure (or too many attempts): the message fails with its reason, its timeline
 * entry and its `message.failed` event, and leaves the hand-off queue, in one transaction.
 */
export async function recordFailed(
  db: DataSource,
  messageId: string,
  failure: { code: string; message: string },
  connection: { id: string; workspaceId: string; slug: string } | null,
): Promise<void> {
  await db.transaction(async (em: EntityManager) => {
    const [updated] = await rows(
      em,
      `UPDATE messages SET status = $4, error_code = $2, error_message = $3, updated_at = now()
        WHERE id = $1 AND status = ANY($5::text[]) RETURNING *`,
      [messageId, failure.code, failure.message, targetOf("recordFailed"), sourcesOf("recordFailed")],
    );
    if (updated && connection) {
      const event = buildEvent({ workspaceId: connection.workspaceId, type: "message.failed", connection, data: messageView(messageFromRow(updated), connection.slug) });
      await em.query(
        `WITH t AS (INSERT INTO message_timeline (message_id, status, detail) VALUES ($1, 'failed', $2))
         ${insertEvents(eventValues(3))}`,
        [messageId, `${failure.code}: ${failure.message}`, ...eventParams(event)],
      );
    }
    await em.query(`DELETE FROM dispatch_queue WHERE message_id = $1`, [messageId]);
  });
}
