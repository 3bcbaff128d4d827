// Reports from the engines (docs/engines.md, "The callback wire format"): POST /v1/provider/{providerName}/{token}. The token
// is the connection's only credential here. Each report is applied in one transaction together
// with its dedupe row, so a redelivery (same event_id) finds the row and changes nothing, and a
// report that failed half-way leaves no dedupe row and is applied in full when retried. Reports
// handed over in process (handleInProcess) take the same path without the dedupe rows.
import type { DataSource, EntityManager } from "typeorm";
import type { ConnectionRestrictionEvent, ConnectionStateEvent, GroupMetadataEvent, GroupParticipantsEvent, InboundMessageEvent, MessageStatusEvent, ProviderCallbackBody, ProviderEvent } from "../../contract/index.js";
import { callbackTokenDigest } from "../connections/callback-token.js";
import { Connection, connectionColumns, connectionFromRow, PairingGrant } from "../connections/entities.js";
import { connectionView, moveConnection } from "../connections/service.js";
import { restrictionHolds } from "../connections/states.js";
import { recordEvent } from "../events/record.js";
import { prepared } from "../db/prepared.js";
import { rows } from "../db/rows.js";
import { applyGroup, applyParticipants } from "../groups/cache.js";
import { ApiError } from "../http/errors.js";
import { applyConversationEvent, isConversationEvent } from "../messages/store/conversation-reports.js";
import { applyReports, recordInbound, recordPhoneOutbound } from "../messages/store/reports.js";

export interface ProviderAck {
  accepted: boolean;
}

// The one rule for which connection a callback path names ($1 the token's digest, $2 the provider).
const CALLBACK_CONNECTION = `callback_token_digest = $1 AND transport = $2 AND deleted_at IS NULL`;

export interface ProviderCallbackOptions {
  /** AI_DEBOUNCE_MS: how long an inbound message waits for the contact's next before its AI run. */
  aiDebounceMs: number;
}

export class ProviderCallbackService {
  constructor(
    private readonly db: DataSource,
    private readonly options: ProviderCallbackOptions,
  ) {}

  /** Whether a callback path names a live connection: asked before its body is read. */
  async knows(providerName: string, token: string): Promise<boolean> {
    const found = await rows(this.db, `SELECT 1 FROM connections WHERE ${CALLBACK_CONNECTION}`, [callbackTokenDigest(token), providerName]);
    return found.length > 0;
  }

  /**
   * Applies one event, or a batch in order, in one transaction: all of it or none. Each event is
   * deduplicated by its event_id (a redelivery, or the same event twice in a batch, is ignored).
   */
  async handle(providerName: string, token: string, body: ProviderCallbackBody): Promise<ProviderAck> {
    return this.apply(providerName, "events" in body ? body.events : [body], { tokenDigest: callbackTokenDigest(token) });
  }

  /**
   * Reports of an engine running in this process, handed over without HTTP (the sandbox's message
   * receipts: docs/decisions.md, "Connections and the sandbox"): applied as a callback's, in one
   * transaction, without dedupe rows: they are never delivered twice, so nothing is to be
   * recognised again. 404 when the connection is gone or has moved to another engine.
   */
  async handleInProcess(providerName: string, connectionId: string, events: ProviderEvent[]): Promise<ProviderAck> {
    return this.apply(providerName, events, { connectionId });
  }

  private async apply(providerName: string, events: ProviderEvent[], by: { tokenDigest: Buffer } | { connectionId: string }): Promise<ProviderAck> {
    const dedupe = "tokenDigest" in by;
    return await this.db.transaction(async (em) => {
      // One round trip: the connection and the dedupe rows. State reports lock the connection so
      // that they and user operations on it apply one at a time. Message reports only read it:
      // a lock there would queue every report of a number behind the others.
      const locks = events.some((e) => e.type === "connection.state" || e.type === "connection.restriction");
      const [found] = dedupe
        ? await rows<Record<string, unknown> & { fresh: string[] }>(
            em,
            `WITH c AS (
               SELECT * FROM connections
                WHERE ${CALLBACK_CONNECTION}
                ${locks ? "FOR UPDATE" : ""}
             ), d AS (
               INSERT INTO provider_callbacks (connection_id, event_id) SELECT c.id, e FROM c, unnest($3::text[]) AS e
               ON CONFLICT DO NOTHING RETURNING event_id
             )
             SELECT c.*, ARRAY(SELECT event_id FROM d) AS fresh FROM c`,
            [by.tokenDigest, providerName, events.map((e) => e.event_id)],
          )
        : await prepared<Record<string, unknown>>(
            em,
            locks ? "in-process-connection-locked" : "in-process-connection",
            `SELECT ${connectionColumns("c")} FROM connections c WHERE c.id = $1 AND c.transport = $2 AND c.deleted_at IS NULL ${locks ? "FOR UPDATE" : ""}`,
            [by.connectionId, providerName],
          );
      if (!found) throw ApiError.notFound("callback (unknown provider or token)");
      const fresh = dedupe ? new Set(found.fresh as string[]) : null;
      const connection = em.getRepository(Connection).create(connectionFromRow(found));
      const statuses = new StatusBatch(connection);
      let accepted = false;
      for (const event of events) {
        // The first of an event_id only: a repeat within the batch is a redelivery too.
        if (fresh && !fresh.delete(event.event_id)) continue;
        if (event.type === "message.status") statuses.add(event);
        else if (event.type === "message.outbound_from_phone") accepted = (await recordPhoneOutbound(em, connection, event)) !== null || accepted;
        else if (event.type === "connection.restriction") accepted = (await this.restriction(em, connection, event)) || accepted;
        else if (event.type === "group.metadata" || event.type === "group.participants") accepted = (await this.group(em, connection, event)) || accepted;
        else if (isConversationEvent(event)) accepted = (await applyConversationEvent(em, connection, event)) || accepted;
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
      // A device still linked (replaced elsewhere, version refused…) is reopened by resume without pairing.
      await moveConnection(em, connection, "unlink", { linked: event.still_linked ?? false, ...(event.detail && { detail: event.detail }) });
    }
    return { accepted: true };
  }

  /**
   * The network restricted the account, or lifted the restriction. The connection stays in its
   * state; while the restriction holds its messages stay queued (the dispatcher does not claim
   * them) and `connection.restricted` tells subscribers, once per restriction reported.
   */
  private async restriction(em: EntityManager, connection: Connection, event: ConnectionRestrictionEvent): Promise<boolean> {
    if (connection.state === "deleted") return false;
    const until = event.active && event.until ? new Date(event.until) : null;
    const was = restrictionHolds(connection);
    const now = new Date();
    Object.assign(connection, { restricted: event.active, restrictedUntil: until, updatedAt: now });
    await em.update(Connection, { id: connection.id }, { restricted: event.active, restrictedUntil: until, updatedAt: now });
    if (!was && restrictionHolds(connection)) {
      await recordEvent(em, { workspaceId: connection.workspaceId, type: "connection.restricted", connection: { id: connection.id, slug: connection.slug }, data: connectionView(connection) });
    }
    return true;
  }

  /** A group's metadata or participants changed (server/groups/cache.ts). */
  private async group(em: EntityManager, connection: Connection, event: GroupMetadataEvent | GroupParticipantsEvent): Promise<boolean> {
    if (event.type === "group.participants") {
      await applyParticipants(em, connection, event.group_id, event.action, event.participants);
      return true;
    }
    const g = event.group;
    await applyGroup(em, connection, g.id, { ...g, createdAt: new Date(g.created_at) });
    return true;
  }

  /** An inbound message (server/messages/store/reports.ts); it writes the AI run's job too. */
  private async inbound(em: EntityManager, connection: Connection, event: InboundMessageEvent): Promise<ProviderAck> {
    await recordInbound(em, connection, event, this.options.aiDebounceMs);
    return { accepted: true };
  }
}

/** The status reports of one callback, applied together (server/messages/store/reports.ts). */
class StatusBatch {
  private readonly reports: MessageStatusEvent[] = [];

  constructor(private readonly connection: Connection) {}

  add(report: MessageStatusEvent): void {
    this.reports.push(report);
  }

  /** True when any report changed something. */
  apply(em: EntityManager): Promise<boolean> {
    return applyReports(em, this.connection, this.reports);
  }
}
