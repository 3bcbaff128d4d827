// What the network tells about messages: status reports of our outbound messages (decided by
// status.ts's `transition()`), inbound messages, and messages written on the linked phone itself. Both write inside the caller's transaction,
// next to the callback's dedupe rows.
import type { EntityManager } from "typeorm";
import { hasContent, type InboundMessageEvent, type MessageStatusEvent, type PhoneOutboundEvent } from "../../../contract/index.js";
import type { Connection } from "../../connections/entities.js";
import { prepared } from "../../db/prepared.js";
import { rows } from "../../db/rows.js";
import type { DomainEvent } from "../../events/entities.js";
import { buildEvent, eventParams, eventValues, insertEvents } from "../../events/record.js";
import { newId } from "../../ids.js";
import { usageIncrementSql, usageShard } from "../../workspace/usage.js";
import { NO_CONVERSATION, type Message } from "../entities.js";
import { transition } from "../status.js";
import { messageView } from "../view.js";
import { json } from "./accept.js";
import { messageFromRow } from "./row.js";
import { AI_RUN_JOB } from "../../../jobs/names.js";

/**
 * Applies the status reports of one callback, in order: their messages read and locked in one
 * statement, each report decided against the message as the ones before it left it, and every
 * change, timeline entry and event written in one more. True when any report changed something.
 */
export async function applyReports(em: EntityManager, connection: Connection, reports: MessageStatusEvent[]): Promise<boolean> {
  if (!reports.length) return false;
  const ids = [...new Set(reports.map((r) => r.message_id))].sort();
  // NO KEY UPDATE (the lock the update below takes anyway), in id order: reports of one message
  // apply one at a time, and two batches cannot deadlock. Found by the
  // primary key alone, and only this connection's outbound messages kept: with the connection in
  // the statement, a planner whose statistics are stale (a young table, no autovacuum yet) read
  // every message of the connection through its index instead, 2,600 rows for 51 (docs/performance.md).
  const found = await rows(em, `SELECT * FROM messages WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, [ids]);
  const messages = new Map(
    found.filter((r) => r.connection_id === connection.id && r.direction === "outbound").map((r) => [r.id as string, messageFromRow(r)]),
  );
  const changed = new Map<string, Message>();
  const timeline: { id: string; status: string; at: Date; detail: string | null }[] = [];
  const events: DomainEvent[] = [];
  const now = Date.now();
  for (const report of reports) {
    const message = messages.get(report.message_id);
    if (!message) continue;
    const decision = transition(message.status, report.status);
    const detail = report.error ? `${report.error.code}: ${report.error.message}` : report.participant ? `by ${report.participant}` : null;
    const at = new Date(report.timestamp);
    if (!decision.apply) {
      // A late report (delivered after read) is history worth keeping, not a move backwards; so
      // is each group member's receipt after the first moved the status.
      if (report.participant && message.status !== "canceled") timeline.push({ id: message.id, status: report.status, at, detail });
      else if (decision.recordInTimeline) timeline.push({ id: message.id, status: report.status, at, detail: detail ? `late: ${detail}` : "late report" });
      continue;
    }
    const updated: Message = {
      ...message,
      status: report.status,
      providerMessageId: report.provider_message_id ?? message.providerMessageId,
      errorCode: report.status === "failed" ? (report.error?.code ?? "provider_failed") : message.errorCode,
      errorMessage: report.status === "failed" ? (report.error?.message ?? "The network reported a failure without details.") : message.errorMessage,
      updatedAt: new Date(now),
    };
    messages.set(message.id, updated);
    changed.set(message.id, updated);
    timeline.push({ id: message.id, status: report.status, at, detail });
    // A millisecond apart, so that the outbox's (created_at, id) order keeps the reports' order.
    const data = messageView(updated, connection.slug, connection.phone);
    events.push(buildEvent({ workspaceId: connection.workspaceId, type: `message.${report.status}`, connection, data }, new Date(now + events.length)));
  }
  if (!timeline.length) return false;
  const m = [...changed.values()];
  await prepared(
    em,
    "reports-apply",
    `WITH m AS (
       UPDATE messages t SET status = v.status, provider_message_id = v.provider_message_id, error_code = v.error_code,
                             error_message = v.error_message, updated_at = v.updated_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[])
           AS v(id, status, provider_message_id, error_code, error_message, updated_at)
        WHERE t.id = v.id
     ), t AS (
       INSERT INTO message_timeline (message_id, status, at, detail)
       SELECT message_id, status, at, detail FROM unnest($7::text[], $8::text[], $9::timestamptz[], $10::text[])
         WITH ORDINALITY AS v(message_id, status, at, detail, n) ORDER BY n
     )
     ${insertEvents(`SELECT e.id, e.workspace_id, e.type, e.connection_id, p.payload, e.created_at
       FROM unnest($11::text[], $12::text[], $13::text[], $14::text[], $16::timestamptz[]) WITH ORDINALITY AS e(id, workspace_id, type, connection_id, created_at, n)
       JOIN jsonb_array_elements($15::jsonb) WITH ORDINALITY AS p(payload, n) ON p.n = e.n
      ORDER BY e.n`)}`,
    [
      m.map((x) => x.id), m.map((x) => x.status), m.map((x) => x.providerMessageId), m.map((x) => x.errorCode), m.map((x) => x.errorMessage),
      m.map((x) => x.updatedAt),
      timeline.map((t) => t.id), timeline.map((t) => t.status), timeline.map((t) => t.at), timeline.map((t) => t.detail),
      events.map((e) => e.id), events.map((e) => e.workspaceId), events.map((e) => e.type), events.map((e) => e.connectionId),
      // The payloads as one JSON array, not a jsonb[] (store/accept.ts, SEND_SQL, says why).
      JSON.stringify(events.map((e) => e.payload)), events.map((e) => e.createdAt),
    ],
  );
  return true;
}

/**
 * What recording an inbound message did: the message, and when an AI run became due for its
 * contact (null: none, or the contact's burst has its run due already: the job that meets it
 * finds the later due time and waits for it, so a burst costs one job, not one per message).
 */
export interface InboundRecorded {
  message: Message;
  aiDueAt: Date | null;
}

/**
 * Stores an inbound message `delivered`: the network has delivered it to our number, which is
 * the furthest an inbound message goes until someone reads it in an app (not ours to know). The
 * message, its timeline entry, its `message.received` event, its usage count and, for a
 * one-to-one message on a connection whose AI policy is enabled, its AI debounce row
 * (server/ai/runs/) and, for a new one, its `ai.run` job in the job outbox: one statement.
 */
export async function recordInbound(em: EntityManager, connection: Connection, event: InboundMessageEvent, aiDebounceMs: number): Promise<InboundRecorded> {
  const now = new Date();
  const message = reportedMessage(connection, event, now, {
    direction: "inbound",
    status: "delivered",
    recipient: event.group !== undefined ? { group: event.group } : (connection.phone ?? event.to ?? "unknown"),
    sender: event.from,
    // The sender's LID beside the number it was reported by (the network's own address of them).
    metadata: event.from_lid && event.from_lid !== event.from ? { from_lid: event.from_lid } : null,
  });

  const received = buildEvent(
    { workspaceId: connection.workspaceId, type: "message.received", connection, data: messageView(message, connection.slug, connection.phone) },
    now,
  );
  // Group messages, and messages with nothing to answer (an engine may report an empty body with
  // no media or location), never start a run: the debounce member is left out for them.
  const startsAi = event.group === undefined && hasContent(event);
  const [written] = await rows<{ ai_due_at: Date | null }>(
    em,
    `WITH m AS (
       INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                             provider_message_id, created_at, updated_at, metadata)
       VALUES ($1, $2, $3, 'inbound', 'delivered', $4::jsonb, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $10, ${startsAi ? "$20" : "$19"}::jsonb)
     ), t AS (
       INSERT INTO message_timeline (message_id, status, at, detail) VALUES ($1, 'delivered', $11, 'received from the network')
     ), u AS (
       ${usageIncrementSql("inbound", "$2", "$12")}
     ), a AS (
       ${startsAi ? AI_DEBOUNCE_SQL : "SELECT NULL::timestamptz AS due_at, false AS created WHERE false"}
     ), j AS (
       INSERT INTO job_outbox (name, data, run_at)
       SELECT '${AI_RUN_JOB}', jsonb_build_object('connection_id', $3::text, 'contact', $5::text), due_at FROM a WHERE created
     )
     ${insertEvents(eventValues(13))}
     RETURNING (SELECT due_at FROM a WHERE created) AS ai_due_at`,
    [
      message.id, message.workspaceId, message.connectionId, JSON.stringify(message.recipient), message.sender, message.body,
      json(message.media), json(message.location), message.providerMessageId, now, new Date(event.timestamp), usageShard(),
      ...eventParams(received),
      ...(startsAi ? [aiDebounceMs] : []),
      json(message.metadata),
    ],
  );
  return { message, aiDueAt: written?.ai_due_at ?? null };
}

/**
 * The AI trigger, a member of recordInbound's statement ($1 message, $2 workspace, $3 connection,
 * $5 contact, $19 the debounce in ms, AI_DEBOUNCE_MS): when the connection's policy is enabled,
 * the contact's debounce row is created, or pushed to the debounce from now when it waits already
 * (a burst is answered once), never past 30 s after the burst's first message. Answers the due time and whether the row is new (`xmax = 0`: no
 * earlier version of the row); nothing when AI is off.
 */
const AI_DEBOUNCE_SQL = `INSERT INTO ai_debounce (connection_id, contact, workspace_id, message_id, first_at, due_at)
       SELECT $3, $5, $2, $1, now(), now() + $19::int * interval '1 millisecond' FROM ai_policies WHERE connection_id = $3 AND enabled
       ON CONFLICT (connection_id, contact) DO UPDATE
          SET message_id = EXCLUDED.message_id, due_at = LEAST(EXCLUDED.due_at, ai_debounce.first_at + interval '30 seconds')
       RETURNING due_at, (xmax = 0) AS created`;

/** Marks an outbound message the gateway did not send: written on the linked phone itself. */
export const PHONE_ORIGIN = { origin: "phone" } as const;

/**
 * A message the person holding the linked phone wrote from the phone itself: an outbound message
 * the gateway did not send, status `sent`, with `metadata.origin = "phone"` so that readers (and
 * the AI assistant, which leaves such a conversation to the human) tell it from the gateway's own
 * sends. Not counted as usage. The message, its timeline entry and its `message.sent` event: one
 * statement. Null when the event names no recipient.
 */
export async function recordPhoneOutbound(em: EntityManager, connection: Connection, event: PhoneOutboundEvent): Promise<Message | null> {
  const recipient = event.group !== undefined ? { group: event.group } : event.to;
  if (recipient === undefined) return null;
  const now = new Date();
  const message = reportedMessage(connection, event, now, { direction: "outbound", status: "sent", recipient, sender: connection.phone, metadata: { ...PHONE_ORIGIN } });

  const sent = buildEvent({ workspaceId: connection.workspaceId, type: "message.sent", connection, data: messageView(message, connection.slug, connection.phone) }, now);
  await em.query(
    `WITH m AS (
       INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                             metadata, provider_message_id, created_at, updated_at)
       VALUES ($1, $2, $3, 'outbound', 'sent', $4::jsonb, $5, $6, $7::jsonb, $8::jsonb, $9::jsonb, $10, $11, $11)
     ), t AS (
       INSERT INTO message_timeline (message_id, status, at, detail) VALUES ($1, 'sent', $12, 'written on the linked phone, not sent by the gateway')
     )
     ${insertEvents(eventValues(13))}`,
    [
      message.id, message.workspaceId, message.connectionId, JSON.stringify(message.recipient), message.sender, message.body,
      json(message.media), json(message.location), JSON.stringify(message.metadata), message.providerMessageId, now, new Date(event.timestamp),
      ...eventParams(sent),
    ],
  );
  return message;
}

/** A message the network reported (inbound, or written on the phone): its content as reported. */
function reportedMessage(
  connection: Connection,
  event: InboundMessageEvent | PhoneOutboundEvent,
  now: Date,
  fields: Pick<Message, "direction" | "status" | "recipient" | "sender" | "metadata">,
): Message {
  return {
    id: newId("msg"),
    workspaceId: connection.workspaceId,
    connectionId: connection.id,
    ...fields,
    body: event.body ?? null,
    media: event.media ?? null,
    location: event.location ?? null,
    context: null,
    contextSensitivity: null,
    sendAt: null,
    timezone: null,
    providerMessageId: event.provider_message_id,
    errorCode: null,
    errorMessage: null,
    scheduleId: null,
    ...NO_CONVERSATION,
    createdAt: now,
    updatedAt: now,
  };
}
