// Reports from the engines (spec 4.10, 6.7): POST /v1/provider/{providerName}/{token}. The token
// is the connection's only credential here. Each report is applied in one transaction together
// with its dedupe row, so a redelivery (same event_id) finds the row and changes nothing, and a
// report that failed half-way leaves no dedupe row and is applied in full when retried.
import type { DataSource, EntityManager } from "typeorm";
import type { ConnectionStateEvent, InboundMessageEvent, MessageStatusEvent, ProviderCallbackBody } from "../../contract/index.js";
import { callbackTokenDigest } from "../connections/callback-token.js";
import { Connection, connectionFromRow, PairingGrant } from "../connections/entities.js";
import { moveConnection } from "../connections/service.js";
import { rows } from "../db/rows.js";
import type { DomainEvent } from "../events/entities.js";
import { buildEvent, EVENT_INSERT_COLUMNS, recordEvent } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";
import { Message, TimelineEntry } from "../messages/entities.js";
import { fromRow } from "../messages/dispatcher.js";
import { transition } from "../messages/status.js";
import { messageView } from "../messages/view.js";
import { countMessage } from "../workspace/usage.js";
import { recordPhoneOutbound } from "./phone-outbound.js";

export interface ProviderAck {
  accepted: boolean;
}

export class ProviderCallbackService {
  constructor(private readonly db: DataSource) {}

  /**
   * Applies one event, or a batch in order, in one transaction: all of it or none. Each event is
   * deduplicated by its event_id (a redelivery, or the same event twice in a batch, is ignored).
   */
  async handle(providerName: string, token: string, body: ProviderCallbackBody): Promise<ProviderAck> {
    const events = "events" in body ? body.events : [body];
    return this.db.transaction(async (em) => {
      // One round trip: the connection and the dedupe rows. State reports lock the connection so
      // that they and user operations on it apply one at a time. Message reports only read it:
      // a lock there would queue every report of a number behind the others.
      const locks = events.some((e) => e.type === "connection.state");
      const [found] = await rows<Record<string, unknown> & { fresh: string[] }>(
        em,
        `WITH c AS (
           SELECT * FROM connections
            WHERE callback_token_digest = $1 AND transport = $2 AND deleted_at IS NULL
            ${locks ? "FOR UPDATE" : ""}
         ), d AS (
           INSERT INTO provider_callbacks (connection_id, event_id) SELECT c.id, e FROM c, unnest($3::text[]) AS e
           ON CONFLICT DO NOTHING RETURNING event_id
         )
         SELECT c.*, ARRAY(SELECT event_id FROM d) AS fresh FROM c`,
        [callbackTokenDigest(token), providerName, events.map((e) => e.event_id)],
      );
      if (!found) throw ApiError.notFound("callback (unknown provider or token)");
      const fresh = new Set(found.fresh);
      const connection = em.getRepository(Connection).create(connectionFromRow(found));
      const statuses = new StatusBatch(connection);
      let accepted = false;
      for (const event of events) {
        // The first of an event_id only: a repeat within the batch is a redelivery too.
        if (!fresh.delete(event.event_id)) continue;
        if (event.type === "message.status") statuses.add(event);
        else if (event.type === "message.outbound_from_phone") accepted = (await recordPhoneOutbound(em, connection, event)).accepted || accepted;
        else accepted = (await (event.type === "connection.state" ? this.connectionState(em, connection, event) : this.inbound(em, connection, event))).accepted || accepted;
      }
      return { accepted: (await statuses.apply(em)) || accepted };
    });
  }

  private async connectionState(em: EntityManager, connection: Connection, event: ConnectionStateEvent): Promise<ProviderAck> {
    if (event.state === "connected") {
      await moveConnection(em, connection, "link", { linked: true, phone: event.phone ?? connection.phone });
      // Linked: an open grant's payload is of no further use, and it is a credential.
      await em.delete(PairingGrant, { connectionId: connection.id });
    } else {
      await moveConnection(em, connection, "unlink", { linked: false });
    }
    return { accepted: true };
  }

  /**
   * An inbound message is stored `delivered`: the network has delivered it to our number, which
   * is the furthest an inbound message goes until someone reads it in an app (not ours to know).
   */
  private async inbound(em: EntityManager, connection: Connection, event: InboundMessageEvent): Promise<ProviderAck> {
    const now = new Date();
    const message = em.create(Message, {
      id: newId("msg"),
      workspaceId: connection.workspaceId,
      connectionId: connection.id,
      direction: "inbound",
      status: "delivered",
      recipient: event.group !== undefined ? { group: event.group } : (connection.phone ?? event.to ?? "unknown"),
      sender: event.from,
      body: event.body ?? null,
      media: event.media ?? null,
      location: event.location ?? null,
      context: null,
      metadata: null,
      contextSensitivity: null,
      sendAt: null,
      timezone: null,
      providerMessageId: event.provider_message_id,
      errorCode: null,
      errorMessage: null,
      scheduleId: null,
      createdAt: now,
      updatedAt: now,
    });
    await em.insert(Message, message as never);
    await em.insert(TimelineEntry, { messageId: message.id, status: "delivered", at: new Date(event.timestamp), detail: "received from the network" });
    await recordEvent(em, {
      workspaceId: connection.workspaceId,
      type: "message.received",
      connection: { id: connection.id, slug: connection.slug },
      data: messageView(message, connection.slug, connection.phone),
    });
    await countMessage(em, connection.workspaceId, "inbound");
    return { accepted: true };
  }

}

/**
 * The status reports of one callback, applied together: their messages read and locked in one
 * statement, each report decided in order against the message as the ones before it left it, and
 * every change, timeline entry and event written in one more.
 */
class StatusBatch {
  private readonly reports: MessageStatusEvent[] = [];

  constructor(private readonly connection: Connection) {}

  add(report: MessageStatusEvent): void {
    this.reports.push(report);
  }

  /** True when any report changed something. */
  async apply(em: EntityManager): Promise<boolean> {
    if (!this.reports.length) return false;
    const { connection } = this;
    const ids = [...new Set(this.reports.map((r) => r.message_id))].sort();
    // NO KEY UPDATE, in id order: reports of one message apply one at a time, without blocking
    // the foreign-key checks of its timeline rows, and two batches cannot deadlock.
    const found = await rows(em, `SELECT * FROM messages WHERE id = ANY($1) AND connection_id = $2 AND direction = 'outbound' ORDER BY id FOR NO KEY UPDATE`, [
      ids,
      connection.id,
    ]);
    const messages = new Map(found.map((r) => [r.id as string, fromRow(r)]));
    const changed = new Map<string, Message>();
    const timeline: { id: string; status: string; at: Date; detail: string | null }[] = [];
    const events: DomainEvent[] = [];
    const now = Date.now();
    for (const report of this.reports) {
      const message = messages.get(report.message_id);
      if (!message) continue;
      const decision = transition(message.status, report.status);
      const detail = report.error ? `${report.error.code}: ${report.error.message}` : null;
      const at = new Date(report.timestamp);
      if (!decision.apply) {
        // A late report (delivered after read) is history worth keeping, not a move backwards.
        if (decision.recordInTimeline) timeline.push({ id: message.id, status: report.status, at, detail: detail ? `late: ${detail}` : "late report" });
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
    await em.query(
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
       INSERT INTO events ${EVENT_INSERT_COLUMNS}
       SELECT * FROM unnest($11::text[], $12::text[], $13::text[], $14::text[], $15::jsonb[], $16::timestamptz[])`,
      [
        m.map((x) => x.id), m.map((x) => x.status), m.map((x) => x.providerMessageId), m.map((x) => x.errorCode), m.map((x) => x.errorMessage),
        m.map((x) => x.updatedAt),
        timeline.map((t) => t.id), timeline.map((t) => t.status), timeline.map((t) => t.at), timeline.map((t) => t.detail),
        events.map((e) => e.id), events.map((e) => e.workspaceId), events.map((e) => e.type), events.map((e) => e.connectionId),
        events.map((e) => JSON.stringify(e.payload)), events.map((e) => e.createdAt),
      ],
    );
    return true;
  }
}
