// Moves of a message between acceptance and hand-off: cancel, reschedule, release (and expire,
// a release whose connection cannot send). The caller holds the message's row lock (lockMessage)
// inside its transaction; each move applies only from the statuses status.ts gives its action and
// writes the row, its timeline entry and, when the status changes, its event in one statement.
import type { EntityManager } from "typeorm";
import type { Message as MessageView, WebhookEvent } from "../../../contract/index.js";
import { rows } from "../../db/rows.js";
import { buildEvent, insertEvents } from "../../events/record.js";
import type { Message } from "../entities.js";
import { sourcesOf, targetOf, type MessageAction } from "../status.js";
import { messageView } from "../view.js";
import { messageFromRow } from "./row.js";

export interface Locked {
  message: Message;
  connection: { id: string; slug: string; state: string };
}

/**
 * The message, locked until the caller's transaction ends, with its connection. `workspaceId`
 * scopes the lookup to a caller's workspace (outbound messages only); null is for jobs.
 */
export async function lockMessage(em: EntityManager, id: string, workspaceId: string | null): Promise<Locked | null> {
  const [row] = await rows(
    em,
    `SELECT m.*, c.slug AS c_slug, c.state AS c_state
       FROM messages m JOIN connections c ON c.id = m.connection_id
      WHERE m.id = $1 AND ($2::text IS NULL OR (m.workspace_id = $2 AND m.direction = 'outbound'))
        FOR UPDATE OF m`,
    [id, workspaceId],
  );
  if (!row) return null;
  return { message: messageFromRow(row), connection: { id: row.connection_id as string, slug: row.c_slug as string, state: row.c_state as string } };
}

export interface MovePatch {
  detail?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  sendAt?: Date | null;
  timezone?: string | null;
}

/**
 * Applies `action` to a locked message. Returns its view after the move, or null when the
 * message's status is not one the action applies from (nothing is written).
 */
export async function moveMessage(em: EntityManager, locked: Locked, action: MessageAction, patch: MovePatch = {}): Promise<MessageView | null> {
  const { message, connection } = locked;
  if (!sourcesOf(action).includes(message.status)) return null;
  const to = targetOf(action);
  const moved: Message = {
    ...message,
    status: to,
    errorCode: patch.errorCode !== undefined ? patch.errorCode : message.errorCode,
    errorMessage: patch.errorMessage !== undefined ? patch.errorMessage : message.errorMessage,
    sendAt: patch.sendAt !== undefined ? patch.sendAt : message.sendAt,
    timezone: patch.timezone !== undefined ? patch.timezone : message.timezone,
    updatedAt: new Date(),
  };
  const view = messageView(moved, connection.slug);
  // Subscribers follow status changes (the moves here end queued, failed or canceled, each an
  // event of the contract); a reschedule (scheduled → scheduled) is timeline only.
  const event = to === message.status ? null : buildEvent({ workspaceId: message.workspaceId, type: `message.${to}` as WebhookEvent, connection, data: view });
  const [done] = await rows(
    em,
    `WITH m AS (
       UPDATE messages SET status = $2, error_code = $3, error_message = $4, send_at = $5, timezone = $6, updated_at = $7
        WHERE id = $1 AND status = ANY($8::text[]) RETURNING id
     ), t AS (
       INSERT INTO message_timeline (message_id, status, detail) SELECT id, $2, $9 FROM m
     ), e AS (
       ${insertEvents(`SELECT $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::timestamptz FROM m WHERE $10::text IS NOT NULL`)}
     )
     SELECT id FROM m`,
    [
      message.id, to, moved.errorCode, moved.errorMessage, moved.sendAt, moved.timezone, moved.updatedAt, sourcesOf(action), patch.detail ?? null,
      event?.id ?? null, event?.workspaceId ?? null, event?.type ?? null, event?.connectionId ?? null, event ? JSON.stringify(event.payload) : null,
      event?.createdAt ?? null,
    ],
  );
  if (!done) return null;
  Object.assign(message, moved);
  return view;
}

/** Takes a message out of the hand-off queue (a canceled message is never handed off). */
export async function dropHandOff(em: EntityManager, messageId: string): Promise<void> {
  await em.query(`DELETE FROM dispatch_queue WHERE message_id = $1`, [messageId]);
}

/** Puts a released message in the hand-off queue (idempotent). */
export async function queueHandOff(em: EntityManager, message: Pick<Message, "id" | "connectionId">): Promise<void> {
  await em.query(`INSERT INTO dispatch_queue (message_id, connection_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [message.id, message.connectionId]);
}
