// Accepting a message. A 202 means the message, its timeline, its hand-off entry (or, for a
// deferred send, its scheduled state), its event, its usage count and its idempotency record were
// committed together: they are written by one SQL statement, which PostgreSQL runs atomically,
// and in one round trip, which keeps the accept path close to the cost of a single INSERT.
import type { DataSource, EntityManager } from "typeorm";
import type { MessageStatus, SendMessageBody, Message as MessageView } from "../../contract/index.js";
import { Connection } from "../connections/entities.js";
import { buildEvent, EVENT_INSERT_COLUMNS, eventParams } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import { IdempotencyStore, requestFingerprint, type Claim } from "../http/idempotency.js";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import { isValidTimeZone } from "../schedules/recurrence.js";
import { requirePlanFeature } from "../workspace/plan-gate.js";
import { messagesThisMonth, usageIncrementSql, usageShard } from "../workspace/usage.js";
import type { Message } from "./entities.js";
import { messageView } from "./view.js";
import { prepared } from "../db/prepared.js";
import { DataSource as DataSourceClass } from "typeorm";

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
  /** Set by a schedule's fire: the message belongs to it. */
  scheduleId?: string;
}

export class MessageSender {
  private readonly idempotency: IdempotencyStore;

  constructor(private readonly db: DataSource) {
    this.idempotency = new IdempotencyStore(db);
  }

  async send(principal: Principal, body: SendMessageBody, options: SendOptions = {}): Promise<Accepted> {
    checkContent(body);
    const lookup = { name: "send-connection", sql: CONNECTION_BY_SLUG.replace(/\$1/g, "$5").replace(/\$2/g, "$6"), params: [principal.workspaceId, body.connection] };
    let claim: Claim | undefined;
    let row: Record<string, unknown> | undefined;
    if (options.idempotencyKey) {
      // The claim and the connection lookup share one round trip.
      claim = await this.idempotency.claim(principal.workspaceId, options.idempotencyKey, requestFingerprint(body), lookup);
      if (claim.kind === "replay") return { status: claim.status, body: claim.body as MessageView, replayed: true };
      row = claim.row;
    } else {
      [row] = await prepared(this.db, lookup.name + ":plain", CONNECTION_BY_SLUG, lookup.params);
    }
    try {
      const connection = await this.checkConnection(principal, body, row);
      const view = await this.accept(this.db, {
        workspaceId: principal.workspaceId,
        connection,
        body,
        idempotencyKey: claim?.kind === "claimed" ? claim.key : null,
        scheduleId: options.scheduleId ?? null,
      });
      const scheduledFor = view.status === "scheduled" && view.send_at ? new Date(view.send_at) : undefined;
      return { status: 202, body: view, replayed: false, ...(scheduledFor ? { scheduledFor } : {}) };
    } catch (err) {
      if (claim?.kind === "claimed") await this.idempotency.release(claim);
      throw err;
    }
  }

  /** Every rule a send must pass before anything is written; returns the connection. */
  async check(principal: Principal, body: SendMessageBody): Promise<Connection> {
    checkContent(body);
    const [row] = await prepared(this.db, "send-connection:plain", CONNECTION_BY_SLUG, [principal.workspaceId, body.connection]);
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
   * Writes an accepted message: queued for hand-off, scheduled for its send_at, or, with
   * `failure`, recorded as failed (a schedule firing while its connection is not connected).
   * `q` may be a transaction's EntityManager: the caller's other writes then commit with it.
   */
  async accept(q: DataSource | EntityManager, input: AcceptInput): Promise<MessageView> {
    const { message, view, event, timeline, details } = accepted(input);
    const { status } = message;
    const now = message.createdAt;
    const params: unknown[] = [
      message.id, message.workspaceId, message.connectionId, status, JSON.stringify(message.recipient), message.sender, message.body,
      json(message.media), json(message.location), json(message.context), json(message.metadata), message.contextSensitivity,
      message.sendAt, message.timezone, now, message.scheduleId, timeline, usageShard(), input.idempotencyKey, JSON.stringify(view),
      details, message.errorCode, message.errorMessage,
      ...(event ? eventParams(event) : []),
    ];
    const statement =
      `WITH m AS (
         INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                               context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, updated_at,
                               error_code, error_message)
         VALUES ($1, $2, $3, 'outbound', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $15, $15, $22, $23)
       ), t AS (
         INSERT INTO message_timeline (message_id, status, at, detail)
         SELECT $1, s, $15, d FROM unnest($17::text[], $21::text[]) AS x(s, d)
       ), d AS (
         INSERT INTO dispatch_queue (message_id, connection_id, available_at) SELECT $1, $3, $15 WHERE $4 = 'queued'
       ), u AS (
         ${usageIncrementSql("outbound", "$2", "$18")}
       ), i AS (
         ${IdempotencyStore.completeSql({ workspace: "$2", key: "$19", status: "202", body: "$20::jsonb" })}
       )${event ? `, e AS (INSERT INTO events ${EVENT_INSERT_COLUMNS} VALUES ($24, $25, $26, $27, $28::jsonb, $29))` : ""}
       SELECT 1`;
    // Autocommit: one prepared statement. Inside a caller's transaction: that transaction's connection.
    if (isDataSource(q)) await prepared(q, event ? "accept-message-event" : "accept-message", statement, params);
    else await q.query(statement, params);
    return view;
  }

  /**
   * Writes several accepted messages in one statement, inside the caller's transaction (a batch
   * of schedule fires): the same rows as accept() writes for each, without idempotency records.
   * Every message counts on `usageShard`, one usage row per workspace, taken in workspace order.
   */
  async acceptMany(em: EntityManager, inputs: Omit<AcceptInput, "idempotencyKey">[], usageShard: number): Promise<MessageView[]> {
    const all = inputs.map((input) => accepted({ ...input, idempotencyKey: null }));
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
  /** The claimed Idempotency-Key, completed by the same statement; null when none. */
  idempotencyKey: string | null;
  scheduleId: string | null;
  failure?: { code: string; message: string };
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

function isDataSource(q: DataSource | EntityManager): q is DataSource {
  return q instanceof DataSourceClass;
}

/** A raw connections row (snake_case) as the entity. */
function connectionFromRow(r: Record<string, unknown>): Partial<Connection> {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    slug: r.slug as string,
    name: r.name as string | null,
    state: r.state as Connection["state"],
    linked: r.linked as boolean,
    phone: r.phone as string | null,
    transport: r.transport as string,
    callbackNonce: r.callback_nonce as string,
    callbackTokenDigest: r.callback_token_digest as Buffer,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    deletedAt: r.deleted_at as Date | null,
  };
}
