// Reports from the engines (spec 4.10, 6.7): POST /v1/provider/{providerName}/{token}. The token
// is the connection's only credential here. Each report is applied in one transaction together
// with its dedupe row, so a redelivery (same event_id) finds the row and changes nothing, and a
// report that failed half-way leaves no dedupe row and is applied in full when retried.
import type { DataSource, EntityManager } from "typeorm";
import type { ConnectionStateEvent, InboundMessageEvent, MessageStatusEvent, ProviderEvent } from "../../contract/index.js";
import { callbackTokenDigest } from "../connections/callback-token.js";
import { Connection, connectionFromRow, PairingGrant } from "../connections/entities.js";
import { moveConnection } from "../connections/service.js";
import { rows } from "../db/rows.js";
import { buildEvent, EVENT_INSERT_COLUMNS, eventParams, recordEvent } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";
import { Message, TimelineEntry } from "../messages/entities.js";
import { fromRow } from "../messages/dispatcher.js";
import { transition } from "../messages/status.js";
import { messageView } from "../messages/view.js";
import { countMessage } from "../workspace/usage.js";

export interface ProviderAck {
  accepted: boolean;
}

export class ProviderCallbackService {
  constructor(private readonly db: DataSource) {}

  async handle(providerName: string, token: string, event: ProviderEvent): Promise<ProviderAck> {
    return this.db.transaction(async (em) => {
      // One round trip: the connection and the dedupe row. State reports lock the connection so
      // that they and user operations on it apply one at a time. Message reports only read it:
      // a lock there would queue every report of a number behind the others.
      const [found] = await rows<Record<string, unknown> & { fresh: boolean }>(
        em,
        `WITH c AS (
           SELECT * FROM connections
            WHERE callback_token_digest = $1 AND transport = $2 AND deleted_at IS NULL
            ${event.type === "connection.state" ? "FOR UPDATE" : ""}
         ), d AS (
           INSERT INTO provider_callbacks (connection_id, event_id) SELECT id, $3 FROM c ON CONFLICT DO NOTHING RETURNING 1
         )
         SELECT c.*, EXISTS (SELECT 1 FROM d) AS fresh FROM c`,
        [callbackTokenDigest(token), providerName, event.event_id],
      );
      if (!found) throw ApiError.notFound("callback (unknown provider or token)");
      if (!found.fresh) return { accepted: false };
      const connection = em.getRepository(Connection).create(connectionFromRow(found));
      switch (event.type) {
        case "connection.state":
          return this.connectionState(em, connection, event);
        case "message.inbound":
          return this.inbound(em, connection, event);
        case "message.status":
          return this.status(em, connection, event);
      }
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

  private async status(em: EntityManager, connection: Connection, event: MessageStatusEvent): Promise<ProviderAck> {
    // NO KEY UPDATE: reports of one message apply one at a time, without blocking the
    // foreign-key checks of its timeline rows.
    const [row] = await rows(em, `SELECT * FROM messages WHERE id = $1 AND connection_id = $2 AND direction = 'outbound' FOR NO KEY UPDATE`, [
      event.message_id,
      connection.id,
    ]);
    if (!row) return { accepted: false };
    const message = fromRow(row);
    const decision = transition(message.status, event.status);
    const detail = event.error ? `${event.error.code}: ${event.error.message}` : null;
    const at = new Date(event.timestamp);
    if (!decision.apply) {
      // A late report (delivered after read) is history worth keeping, not a move backwards.
      if (!decision.recordInTimeline) return { accepted: false };
      await em.query(`INSERT INTO message_timeline (message_id, status, at, detail) VALUES ($1, $2, $3, $4)`, [
        message.id, event.status, at, detail ? `late: ${detail}` : "late report",
      ]);
      return { accepted: true };
    }
    const updated: Message = {
      ...message,
      status: event.status,
      providerMessageId: event.provider_message_id ?? message.providerMessageId,
      errorCode: event.status === "failed" ? (event.error?.code ?? "provider_failed") : message.errorCode,
      errorMessage: event.status === "failed" ? (event.error?.message ?? "The network reported a failure without details.") : message.errorMessage,
      updatedAt: new Date(),
    };
    const recorded = buildEvent({
      workspaceId: connection.workspaceId,
      type: `message.${event.status}`,
      connection: { id: connection.id, slug: connection.slug },
      data: messageView(updated, connection.slug, connection.phone),
    });
    // The message, its timeline entry and its event: one statement.
    await em.query(
      `WITH m AS (
         UPDATE messages SET status = $2, provider_message_id = $3, error_code = $4, error_message = $5, updated_at = $6 WHERE id = $1
       ), t AS (
         INSERT INTO message_timeline (message_id, status, at, detail) VALUES ($1, $2, $7, $8)
       )
       INSERT INTO events ${EVENT_INSERT_COLUMNS} VALUES ($9, $10, $11, $12, $13::jsonb, $14)`,
      [updated.id, updated.status, updated.providerMessageId, updated.errorCode, updated.errorMessage, updated.updatedAt, at, detail, ...eventParams(recorded)],
    );
    return { accepted: true };
  }
}
