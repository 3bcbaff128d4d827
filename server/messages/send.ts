// Accepting a message. A 202 means the message, its timeline, its hand-off entry (or, for a
// deferred send, its scheduled state), its event, its usage count and its idempotency record were
// committed together: they are written by one SQL statement, which PostgreSQL runs atomically.
// The same statement reads the connection, the key's record and the month's usage and writes
// nothing unless every rule holds, so a send costs one round trip, close to a single INSERT.
import type { DataSource, EntityManager } from "typeorm";
import type { MessageStatus, SendMessageBody, Message as MessageView } from "../../contract/index.js";
import { Connection } from "../connections/entities.js";
import { buildEvent, EVENT_INSERT_COLUMNS } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import { RETENTION_HOURS, requestFingerprint } from "../http/idempotency.js";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import { isValidTimeZone } from "../schedules/recurrence.js";
import { planHas, requirePlanFeature } from "../workspace/plan-gate.js";
import { messagesThisMonth, usageShard } from "../workspace/usage.js";
import type { Message } from "./entities.js";
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
  /** Set by a schedule's fire: the message belongs to it. */
  scheduleId?: string;
}

export class MessageSender {
  constructor(private readonly db: DataSource) {}

  /**
   * Accepts a send in one statement (SEND_SQL): it reads the connection, the Idempotency-Key's
   * record and the month's usage, and writes the message with everything that goes with it only
   * when every rule holds, so a refused send changes nothing. The decision is then read off the
   * statement's one result row.
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
        idempotencyKey: key,
        scheduleId: options.scheduleId ?? null,
      });
      const { message, view, event } = draft;
      const [r] = await prepared<SendRow>(this.db, "send-message", SEND_SQL, [
        message.id, message.workspaceId, message.status, JSON.stringify(message.recipient), message.body,
        json(message.media), json(message.location), json(message.context), json(message.metadata), message.contextSensitivity,
        message.sendAt, message.timezone, message.createdAt, message.scheduleId, draft.timeline, usageShard(), key, JSON.stringify(view),
        body.connection, fingerprint, deferred, planRefuses, allowance,
        event?.id ?? null, event?.type ?? null, event ? JSON.stringify(event.payload) : null,
      ]);
      const row = r!;
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
   * Writes several accepted messages in one statement, inside the caller's transaction (a batch
   * of schedule fires): the same rows as a send writes for each, without idempotency records.
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

function inFlight(): ApiError {
  return new ApiError("idempotency_in_flight", "A request with this Idempotency-Key is still in flight; retry shortly.", { retryAfter: 1 });
}

interface SendRow {
  /** The key's advisory lock was free (always true without a key): no duplicate is running. */
  taken: boolean;
  accepted: boolean;
  /** The key has a record that this send may not take over: replay it, or refuse. */
  prior_blocks: boolean;
  prior_fingerprint: Buffer | null;
  prior_status: number | null;
  prior_body: unknown;
  used: number;
  c_id: string | null;
  c_state: string | null;
  c_phone: string | null;
}

/** A key's record that a new request may take over: one past retention. */
const TAKEOVER = (t: string) => `(${t}.created_at < now() - interval '${RETENTION_HOURS} hours')`;

/**
 * The send. Parameters: $1 message id, $2 workspace, $3 status, $4 recipient, $5 body, $6 media,
 * $7 location, $8 context, $9 metadata, $10 context_sensitivity, $11 send_at, $12 timezone,
 * $13 now, $14 schedule, $15 timeline statuses, $16 usage shard, $17 Idempotency-Key (or null),
 * $18 the response body, $19 connection slug, $20 request fingerprint, $21 deferred,
 * $22 plan refuses a deferred send, $23 monthly allowance (or null), $24-$26 event id, type and
 * payload (null for a deferred send).
 *
 * Concurrent duplicates: the first holds an advisory lock on its key until it commits, and a
 * duplicate that finds it taken writes nothing and is answered 409. The key's record is inserted
 * before the message and the message is written only if it was, so even a duplicate that came
 * after the commit but read an older snapshot writes nothing (ON CONFLICT sees the committed
 * record); it is then run again and replays.
 */
const SEND_SQL = `WITH c AS (
    SELECT id, state, phone FROM connections WHERE workspace_id = $2 AND slug = $19 AND deleted_at IS NULL
  ), prior AS (
    SELECT p.fingerprint, p.response_status, p.response_body, NOT ${TAKEOVER("p")} AS blocks
      FROM idempotency_keys p WHERE p.workspace_id = $2 AND p.key = $17
  ), lock AS (
    SELECT CASE WHEN $17::text IS NULL THEN true ELSE pg_try_advisory_xact_lock(hashtextextended('idempotency:' || $2 || ':' || $17, 0)) END AS taken
  ), used AS (
    SELECT CASE WHEN $23::int IS NULL THEN 0 ELSE (
      SELECT COALESCE(sum(messages_outbound), 0)::int FROM usage_daily
       WHERE workspace_id = $2 AND day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date) END AS n
  ), ok AS (
    SELECT c.id, c.phone FROM c, lock, used
     WHERE lock.taken AND NOT $22::boolean AND ($21::boolean OR c.state = 'connected') AND ($23::int IS NULL OR used.n < $23)
       AND NOT EXISTS (SELECT 1 FROM prior WHERE prior.blocks)
  ), i AS (
    INSERT INTO idempotency_keys AS k (workspace_id, key, fingerprint, response_status, response_body, locked_until, created_at)
    SELECT $2, $17, $20, 202, jsonb_set($18::jsonb, '{from}', COALESCE(to_jsonb(ok.phone), 'null'::jsonb)), NULL, now()
      FROM ok WHERE $17::text IS NOT NULL
    ON CONFLICT (workspace_id, key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
           locked_until = NULL, created_at = now()
     WHERE ${TAKEOVER("k")}
    RETURNING 1
  ), go AS (
    SELECT ok.id, ok.phone FROM ok WHERE $17::text IS NULL OR EXISTS (SELECT 1 FROM i)
  ), m AS (
    INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                          context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, updated_at)
    SELECT $1, $2, go.id, 'outbound', $3, $4::jsonb, go.phone, $5, $6::jsonb, $7::jsonb, $8::jsonb, $9::jsonb, $10, $11::timestamptz, $12, $14, $13::timestamptz, $13::timestamptz
      FROM go
  ), t AS (
    INSERT INTO message_timeline (message_id, status, at, detail)
    SELECT $1, s, $13::timestamptz, NULL FROM go, unnest($15::text[]) AS s
  ), d AS (
    INSERT INTO dispatch_queue (message_id, connection_id, available_at) SELECT $1, go.id, $13::timestamptz FROM go WHERE $3 = 'queued'
  ), u AS (
    INSERT INTO usage_daily (workspace_id, day, shard, messages_outbound)
    SELECT $2, (now() AT TIME ZONE 'UTC')::date, $16, 1 FROM go
    ON CONFLICT (workspace_id, day, shard) DO UPDATE SET messages_outbound = usage_daily.messages_outbound + 1
  ), e AS (
    INSERT INTO events ${EVENT_INSERT_COLUMNS}
    SELECT $24, $2, $25, go.id, jsonb_set($26::jsonb, '{data,from}', COALESCE(to_jsonb(go.phone), 'null'::jsonb)), $13::timestamptz
      FROM go WHERE $25::text IS NOT NULL
  )
  SELECT lock.taken, EXISTS (SELECT 1 FROM go) AS accepted, used.n AS used,
         COALESCE(prior.blocks, false) AS prior_blocks, prior.fingerprint AS prior_fingerprint,
         prior.response_status AS prior_status, prior.response_body AS prior_body,
         c.id AS c_id, c.state AS c_state, c.phone AS c_phone
    FROM lock CROSS JOIN used LEFT JOIN prior ON true LEFT JOIN c ON true`;

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
