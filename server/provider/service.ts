// Reports from the engines (spec 4.10, 6.7): POST /v1/provider/{providerName}/{token}. The token
// is the connection's only credential here. Each report is applied in one transaction together
// with its dedupe row, so a redelivery (same event_id) finds the row and changes nothing, and a
// report that failed half-way leaves no dedupe row and is applied in full when retried.
import type { DataSource, EntityManager } from "typeorm";
import type { ConnectionStateEvent, InboundMessageEvent, MessageStatusEvent, ProviderEvent } from "../../contract/index.js";
import { callbackTokenDigest } from "../connections/callback-token.js";
import { Connection, PairingGrant } from "../connections/entities.js";
import { moveConnection } from "../connections/service.js";
import { rows } from "../db/rows.js";
import { recordEvent } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";
import { Message, TimelineEntry } from "../messages/entities.js";
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
      // State reports lock the row so that they and user operations on the connection apply one
      // at a time. Message reports only read it: a lock there would queue every report of a
      // number behind the others and block new messages' foreign-key checks on the row.
      const query = em
        .getRepository(Connection)
        .createQueryBuilder("c")
        .where("c.callbackTokenDigest = :digest AND c.transport = :provider AND c.deletedAt IS NULL", {
          digest: callbackTokenDigest(token),
          provider: providerName,
        });
      const connection = await (event.type === "connection.state" ? query.setLock("pessimistic_write") : query).getOne();
      if (!connection) throw ApiError.notFound("callback (unknown provider or token)");
      const fresh = await rows(
        em,
        `INSERT INTO provider_callbacks (connection_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING event_id`,
        [connection.id, event.event_id],
      );
      if (!fresh.length) return { accepted: false };
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
    const message = await em.findOne(Message, {
      where: { id: event.message_id, connectionId: connection.id, direction: "outbound" },
      // NO KEY UPDATE: reports of one message apply one at a time, without blocking the
      // foreign-key checks of its timeline rows.
      lock: { mode: "for_no_key_update" },
    });
    if (!message) return { accepted: false };
    const decision = transition(message.status, event.status);
    const detail = event.error ? `${event.error.code}: ${event.error.message}` : null;
    const at = new Date(event.timestamp);
    if (!decision.apply) {
      // A late report (delivered after read) is history worth keeping, not a move backwards.
      if (!decision.recordInTimeline) return { accepted: false };
      await em.insert(TimelineEntry, { messageId: message.id, status: event.status, at, detail: detail ? `late: ${detail}` : "late report" });
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
    await em.update(
      Message,
      { id: message.id },
      {
        status: updated.status,
        providerMessageId: updated.providerMessageId,
        errorCode: updated.errorCode,
        errorMessage: updated.errorMessage,
        updatedAt: updated.updatedAt,
      },
    );
    await em.insert(TimelineEntry, { messageId: message.id, status: event.status, at, detail });
    await recordEvent(em, {
      workspaceId: connection.workspaceId,
      type: `message.${event.status}`,
      connection: { id: connection.id, slug: connection.slug },
      data: messageView(updated, connection.slug, connection.phone),
    });
    return { accepted: true };
  }
}
