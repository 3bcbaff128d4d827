// Accepting a message. A 202 means the message, its timeline, its hand-off entry (or, for a
// deferred send, its scheduled state), its event, its usage count and its idempotency record were
// committed together: they are written by one SQL statement, which PostgreSQL runs atomically.
// The same statement reads the connection, the key's record and the month's usage and writes
// nothing unless every rule holds, so a send costs one round trip, close to a single INSERT.
import type { DataSource, EntityManager } from "typeorm";
import type { MessageStatus, SendMessageBody, Message as MessageView } from "../../contract/index.js";
import { Connection, connectionFromRow } from "../connections/entities.js";
import { buildEvent, EVENT_INSERT_COLUMNS } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import { requestFingerprint } from "../http/idempotency.js";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import { isValidTimeZone } from "../schedules/recurrence.js";
import { planHas, requirePlanFeature } from "../workspace/plan-gate.js";
import { messagesThisMonth } from "../workspace/usage.js";
import type { Message } from "./entities.js";
import { SendBatcher } from "./send-batch.js";
import { messageView } from "./view.js";
import { prepared } from "../db/prepared.js";

/** A send_at less than this far ahead is sent now rather than scheduled. */
const SCHEDULE_THRESHOLD_MS = 1000;

export interface Accepted {
  status: number;
  body: MessageView;
  replayed: boolean;
  /** Set when the message waits for its send_at. */
  scheduledFor?: Date;
}

export interface SendOptions {
  idempotencyKey?: string | undefined;
}

export class MessageSender {
  private readonly batcher: SendBatcher;

  constructor(private readonly db: DataSource) {
    this.batcher = new SendBatcher(db);
  }

  /**
   * Accepts a send in one statement (server/messages/send-batch.ts, shared with the sends that
   * arrive at the same time): it reads the connection, the Idempotency-Key's record and the
   * month's usage, and writes the message with everything that goes with it only when every rule
   * holds, so a refused send changes nothing. The decision is then read off what it found.
   */
  async send(principal: Principal, body: SendMessageBody, options: SendOptions = {}): Promise<Accepted> {
    checkContent(body);
    const key = options.idempotencyKey ?? null;
    const fingerprint = key ? requestFingerprint(body) : null;
    const deferred = isDeferred(body.send_at);
    const planRefuses = deferred && !planHas(principal.plan, "scheduling");
    const allowance = principal.plan.messagesPerMonth;
    for (let attempt = 1; ; attempt++) {
      const draft = accepted({
        workspaceId: principal.workspaceId,
        // Filled in by the statement from the row it reads: the connection's id and number.
        connection: { id: null, slug: body.connection, phone: null } as unknown as Connection,
        body,
        scheduleId: null,
      });
      const { message, view, event } = draft;
      const row = await this.batcher.send({
        id: message.id,
        workspaceId: message.workspaceId,
        status: message.status as "queued" | "scheduled",
        recipient: JSON.stringify(message.recipient),
        body: message.body,
        media: json(message.media),
        location: json(message.location),
        context: json(message.context),
        metadata: json(message.metadata),
        contextSensitivity: message.contextSensitivity,
        sendAt: message.sendAt,
        timezone: message.timezone,
        createdAt: message.createdAt,
        timeline: draft.timeline,
        idempotencyKey: key,
        fingerprint,
        view: JSON.stringify(view),
        connectionSlug: body.connection,
        deferred,
        planRefuses,
        allowance,
        event: event ? { id: event.id, type: event.type, payload: JSON.stringify(event.payload) } : null,
      });
      if (row.accepted) {
        const body202 = { ...view, from: row.c_phone };
        const scheduledFor = body202.status === "scheduled" && body202.send_at ? new Date(body202.send_at) : undefined;
        return { status: 202, body: body202, replayed: false, ...(scheduledFor ? { scheduledFor } : {}) };
      }
      if (row.prior_blocks) {
        if (!row.prior_fingerprint!.equals(fingerprint!)) {
          throw new ApiError("idempotency_mismatch", "This Idempotency-Key was used with a different request body.");
        }
        if (row.prior_status === null) throw inFlight();
        return { status: row.prior_status, body: row.prior_body as MessageView, replayed: true };
      }
      if (!row.taken) throw inFlight();
      if (!row.c_id) throw ApiError.validation([{ path: "connection", message: `no connection with slug ${body.connection}` }]);
      if (planRefuses) await requirePlanFeature(this.db, principal.plan, "scheduling");
      // A deferred send is checked against the connection when it is due, not now.
      if (!deferred && row.c_state !== "connected") {
        throw new ApiError("connection_not_ready", `The connection ${body.connection} is ${row.c_state}, not connected.`);
      }
      if (allowance !== null && row.used >= allowance) {
        throw new ApiError("quota_exceeded", `The ${principal.plan.name} plan allows ${allowance} messages a month.`, { retryAfter: secondsToNextMonth() });
      }
      // Every rule held and yet nothing was written: the key's record was committed by a
      // duplicate after this statement's snapshot was taken. The next attempt sees it.
      if (key && attempt < 3) continue;
      throw new Error(`send ${message.id} was neither accepted nor refused`);
    }
  }

  /** Every rule a send must pass before anything is written; returns the connection. */
  async check(principal: Principal, body: SendMessageBody): Promise<Connection> {
    checkContent(body);
    const [row] = await prepared(this.db, "send-connection", CONNECTION_BY_SLUG, [principal.workspaceId, body.connection]);
    return this.checkConnection(principal, body, row);
  }

  private async checkConnection(principal: Principal, body: SendMessageBody, row: Record<string, unknown> | undefined): Promise<Connection> {
    if (!row) throw ApiError.validation([{ path: "connection", message: `no connection with slug ${body.connection}` }]);
    const connection = this.db.getRepository(Connection).create(connectionFromRow(row));
    const deferred = isDeferred(body.send_at);
    if (deferred) await requirePlanFeature(this.db, principal.plan, "scheduling");
    // A deferred send is checked against the connection when it is due, not now.
    if (!deferred && connection.state !== "connected") {
      throw new ApiError("connection_not_ready", `The connection ${connection.slug} is ${connection.state}, not connected.`);
    }
    const allowance = principal.plan.messagesPerMonth;
    if (allowance !== null && (await messagesThisMonth(this.db.manager, principal.workspaceId)) >= allowance) {
      throw new ApiError("quota_exceeded", `The ${principal.plan.name} plan allows ${allowance} messages a month.`, { retryAfter: secondsToNextMonth() });
    }
    return connection;
  }

  /**
   * Writes several accepted messages in one statement, inside the caller's transaction (a batch
   * of schedule fires): the same rows as a send writes for each, without idempotency records.
   * Every message counts on `usageShard`, one usage row per workspace, taken in workspace order.
   */
  async acceptMany(em: EntityManager, inputs: AcceptInput[], usageShard: number): Promise<MessageView[]> {
    const all = inputs.map(accepted);
    if (!all.length) return [];
    const m = all.map((a) => a.message);
    const timeline = all.flatMap((a) => a.timeline.map((status, i) => ({ id: a.message.id, status, detail: a.details[i] ?? null, at: a.message.createdAt })));
    const queued = m.filter((x) => x.status === "queued");
    const events = all.flatMap((a) => (a.event ? [a.event] : []));
    await em.query(
      `WITH m AS (
         INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                               context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, updated_at,
                               error_code, error_message)
         SELECT id, workspace_id, connection_id, 'outbound', status, recipient, sender, body, media, location,
                context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, created_at, error_code, error_message
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], $8::jsonb[], $9::jsonb[],
                       $10::jsonb[], $11::jsonb[], $12::text[], $13::timestamptz[], $14::text[], $15::text[], $16::timestamptz[],
                       $17::text[], $18::text[])
             AS v(id, workspace_id, connection_id, status, recipient, sender, body, media, location,
                  context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, error_code, error_message)
       ), t AS (
         INSERT INTO message_timeline (message_id, status, at, detail)
         SELECT * FROM unnest($19::text[], $20::text[], $21::timestamptz[], $22::text[])
       ), d AS (
         INSERT INTO dispatch_queue (message_id, connection_id, available_at)
         SELECT * FROM unnest($23::text[], $24::text[], $25::timestamptz[])
       ), u AS (
         INSERT INTO usage_daily (workspace_id, day, shard, messages_outbound)
         SELECT w, (now() AT TIME ZONE 'UTC')::date, $26, count(*) FROM unnest($2::text[]) AS w GROUP BY w ORDER BY w
         ON CONFLICT (workspace_id, day, shard) DO UPDATE SET messages_outbound = usage_daily.messages_outbound + EXCLUDED.messages_outbound
       ), e AS (
         INSERT INTO events ${EVENT_INSERT_COLUMNS}
         SELECT * FROM unnest($27::text[], $28::text[], $29::text[], $30::text[], $31::jsonb[], $32::timestamptz[])
       )
       SELECT 1`,
      [
        m.map((x) => x.id), m.map((x) => x.workspaceId), m.map((x) => x.connectionId), m.map((x) => x.status), m.map((x) => JSON.stringify(x.recipient)),
        m.map((x) => x.sender), m.map((x) => x.body), m.map((x) => json(x.media)), m.map((x) => json(x.location)), m.map((x) => json(x.context)),
        m.map((x) => json(x.metadata)), m.map((x) => x.contextSensitivity), m.map((x) => x.sendAt), m.map((x) => x.timezone), m.map((x) => x.scheduleId),
        m.map((x) => x.createdAt), m.map((x) => x.errorCode), m.map((x) => x.errorMessage),
        timeline.map((t) => t.id), timeline.map((t) => t.status), timeline.map((t) => t.at), timeline.map((t) => t.detail),
        queued.map((x) => x.id), queued.map((x) => x.connectionId), queued.map((x) => x.createdAt),
        usageShard,
        events.map((e) => e.id), events.map((e) => e.workspaceId), events.map((e) => e.type), events.map((e) => e.connectionId),
        events.map((e) => JSON.stringify(e.payload)), events.map((e) => e.createdAt),
      ],
    );
    return all.map((a) => a.view);
  }
}

/** The rows an accepted message writes: the message, its view, its event and its first timeline entries. */
function accepted(input: AcceptInput) {
  const { body, connection, failure } = input;
  const now = new Date();
  const deferred = !failure && isDeferred(body.send_at);
  const status: MessageStatus = failure ? "failed" : deferred ? "scheduled" : "queued";
  const message: Message = {
    id: newId("msg", now.getTime()),
    workspaceId: input.workspaceId,
    connectionId: connection.id,
    direction: "outbound",
    status,
    recipient: body.to,
    sender: connection.phone,
    body: body.body ?? null,
    media: body.media ?? null,
    location: body.location ?? null,
    context: body.context ?? null,
    metadata: body.metadata ?? null,
    contextSensitivity: body.context_sensitivity ?? null,
    sendAt: body.send_at ? new Date(body.send_at) : null,
    timezone: body.timezone ?? null,
    providerMessageId: null,
    errorCode: failure?.code ?? null,
    errorMessage: failure?.message ?? null,
    scheduleId: input.scheduleId,
    createdAt: now,
    updatedAt: now,
  };
  const view = messageView(message, connection.slug);
  const eventType = failure ? "message.failed" : deferred ? null : "message.queued";
  const event = eventType ? buildEvent({ workspaceId: input.workspaceId, type: eventType, connection, data: view }, now) : null;
  const timeline = failure ? ["accepted", "failed"] : deferred ? ["scheduled"] : ["accepted", "queued"];
  const details = failure ? [null, `${failure.code}: ${failure.message}`] : timeline.map(() => null);
  return { message, view, event, timeline, details };
}

export interface AcceptInput {
  workspaceId: string;
  connection: Connection;
  body: SendMessageBody;
  scheduleId: string | null;
  failure?: { code: string; message: string };
}

function inFlight(): ApiError {
  return new ApiError("idempotency_in_flight", "A request with this Idempotency-Key is still in flight; retry shortly.", { retryAfter: 1 });
}

const CONNECTION_BY_SLUG = `SELECT * FROM connections WHERE workspace_id = $1 AND slug = $2 AND deleted_at IS NULL`;

/** The rules that need no database: content, attachment scheme, time zone. */
function checkContent(body: SendMessageBody): void {
  const errors: { path: string; message: string }[] = [];
  const hasBody = body.body !== undefined && body.body.length > 0;
  if (!hasBody && !body.media && !body.location) errors.push({ path: "body", message: "a message needs a body, media or a location" });
  if (body.media && !/^https?:$/.test(new URL(body.media.url).protocol)) errors.push({ path: "media.url", message: "must be an http or https URL" });
  if (body.timezone !== undefined && !isValidTimeZone(body.timezone)) errors.push({ path: "timezone", message: "must be an IANA time zone name" });
  if (errors.length) throw ApiError.validation(errors);
}

function isDeferred(sendAt: string | undefined): boolean {
  return sendAt !== undefined && Date.parse(sendAt) - Date.now() >= SCHEDULE_THRESHOLD_MS;
}

function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function secondsToNextMonth(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}
