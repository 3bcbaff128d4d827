// Writing accepted messages. An accepted message is written with its first timeline entry, its
// hand-off row (when queued), its event and its usage count, all in one statement: ACCEPTED_WRITES
// is that statement's tail, shared by the send path (SEND_SQL: with the send rules and the
// Idempotency-Key record as its guard) and by schedule firing (ACCEPT_MANY_SQL: inside the fire's
// transaction, its rules already decided). Both feed it a relation `go` with the same columns.
import type { DataSource, EntityManager } from "typeorm";
import type { MessageStatus, SendMessageBody, Message as MessageView } from "../../../contract/index.js";
import type { Connection } from "../../connections/entities.js";
import { prepared } from "../../db/prepared.js";
import { rows } from "../../db/rows.js";
import { buildEvent, insertEvents } from "../../events/record.js";
import type { DomainEvent } from "../../events/entities.js";
import { RETENTION_HOURS } from "../../http/idempotency.js";
import { newId } from "../../ids.js";
import { monthOutboundSql, usageShard } from "../../workspace/usage.js";
import { NO_CONVERSATION, type Message, type PollSpec } from "../entities.js";
import { messageView } from "../view.js";
import { MESSAGE_RELEASE_JOB } from "../../../jobs/names.js";

/** A send_at less than this far ahead is sent now rather than scheduled. */
const SCHEDULE_THRESHOLD_MS = 1000;

export function isDeferred(sendAt: string | undefined): boolean {
  return sendAt !== undefined && Date.parse(sendAt) - Date.now() >= SCHEDULE_THRESHOLD_MS;
}

export interface AcceptInput {
  workspaceId: string;
  connection: Connection;
  body: SendMessageBody;
  scheduleId: string | null;
  /** Written `failed` with this reason (a schedule's occurrence that cannot be sent now). */
  failure?: { code: string; message: string };
  /** A reply: our id of the message it quotes. */
  replyTo?: string | null;
  /** A poll. */
  poll?: PollSpec | null;
}

/** An accepted message before it is written: the row, its view and its event. */
export interface AcceptedDraft {
  message: Message;
  view: MessageView;
  event: DomainEvent | null;
}

export function acceptedDraft(input: AcceptInput): AcceptedDraft {
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
    ...NO_CONVERSATION,
    replyTo: input.replyTo ?? null,
    poll: input.poll ?? null,
    createdAt: now,
    updatedAt: now,
  };
  const view = messageView(message, connection.slug);
  const eventType = failure ? "message.failed" : deferred ? null : "message.queued";
  const event = eventType ? buildEvent({ workspaceId: input.workspaceId, type: eventType, connection, data: view }, now) : null;
  return { message, view, event };
}

/**
 * The writes of accepted messages, as CTE members over `go` (one row per message: n, id,
 * workspace_id, connection_id, status, recipient, sender, body, media, location, context,
 * metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, error_code,
 * error_message, event_id, event_type, payload, reply_to, poll). `shard` is the parameter of the
 * usage shard every message of the statement counts on: one usage row per workspace, taken in
 * workspace order, so two statements cannot deadlock on them. The timeline's first entry is the
 * message's status (`accepted` is not written: it is the row's created_at, ACCEPTED_AS in
 * reads.ts); a failed message's entry carries its reason. The event's `from` is the number it is
 * sent from.
 * A deferred send's release job goes to the job outbox in the same statement.
 */
function acceptedWrites(shard: string): string {
  return `m AS (
    INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                          context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, updated_at,
                          error_code, error_message, reply_to, poll)
    SELECT id, workspace_id, connection_id, 'outbound', status, recipient, sender, body, media, location,
           context, metadata, context_sensitivity, send_at, timezone, schedule_id, created_at, created_at, error_code, error_message,
           reply_to, poll
      FROM go
  ), t AS (
    INSERT INTO message_timeline (message_id, status, at, detail)
    SELECT id, status, created_at, CASE WHEN status = 'failed' THEN error_code || ': ' || error_message END FROM go ORDER BY n
  ), d AS (
    INSERT INTO dispatch_queue (message_id, connection_id, available_at) SELECT id, connection_id, created_at FROM go WHERE status = 'queued'
  ), u AS (
    INSERT INTO usage_daily (workspace_id, day, shard, messages_outbound)
    SELECT workspace_id, (now() AT TIME ZONE 'UTC')::date, ${shard}, count(*) FROM go GROUP BY workspace_id ORDER BY workspace_id
    ON CONFLICT (workspace_id, day, shard) DO UPDATE SET messages_outbound = usage_daily.messages_outbound + EXCLUDED.messages_outbound
  ), e AS (
    ${insertEvents(`SELECT event_id, workspace_id, event_type, connection_id, jsonb_set(payload, '{data,from}', COALESCE(to_jsonb(sender), 'null'::jsonb)), created_at
                      FROM go WHERE event_type IS NOT NULL`)}
  ), j AS (
    INSERT INTO job_outbox (name, data, run_at)
    SELECT '${MESSAGE_RELEASE_JOB}', jsonb_build_object('message_id', id), send_at FROM go WHERE status = 'scheduled'
  )`;
}

const ACCEPT_MANY_SQL = `WITH go AS (
    SELECT u.*, NULLIF(p.payload, 'null'::jsonb) AS payload
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], $8::jsonb[], $9::jsonb[],
                  $10::jsonb[], $11::jsonb[], $12::text[], $13::timestamptz[], $14::text[], $15::text[], $16::timestamptz[],
                  $17::text[], $18::text[], $19::text[], $20::text[], $23::text[], $24::jsonb[])
      WITH ORDINALITY AS u(id, workspace_id, connection_id, status, recipient, sender, body, media, location, context, metadata,
                           context_sensitivity, send_at, timezone, schedule_id, created_at, error_code, error_message,
                           event_id, event_type, reply_to, poll, n)
      JOIN jsonb_array_elements($21::jsonb) WITH ORDINALITY AS p(payload, n) ON p.n = u.n
  ), ${acceptedWrites("$22")}
  SELECT 1`;

/**
 * Writes accepted messages in one statement, inside the caller's transaction (a batch of schedule
 * fires): the rows a send writes for each, without Idempotency-Key records. Every message counts
 * on `shard`.
 */
export async function acceptMany(em: EntityManager, inputs: AcceptInput[], shard: number): Promise<MessageView[]> {
  const drafts = inputs.map(acceptedDraft);
  if (!drafts.length) return [];
  const m = drafts.map((d) => d.message);
  const col = <T>(f: (d: AcceptedDraft, m: Message) => T): T[] => drafts.map((d, i) => f(d, m[i]!));
  await em.query(ACCEPT_MANY_SQL, [
    col((_, x) => x.id), col((_, x) => x.workspaceId), col((_, x) => x.connectionId), col((_, x) => x.status), col((_, x) => JSON.stringify(x.recipient)),
    col((_, x) => x.sender), col((_, x) => x.body), col((_, x) => json(x.media)), col((_, x) => json(x.location)), col((_, x) => json(x.context)),
    col((_, x) => json(x.metadata)), col((_, x) => x.contextSensitivity), col((_, x) => x.sendAt), col((_, x) => x.timezone), col((_, x) => x.scheduleId),
    col((_, x) => x.createdAt), col((_, x) => x.errorCode), col((_, x) => x.errorMessage),
    col((d) => d.event?.id ?? null), col((d) => d.event?.type ?? null), JSON.stringify(drafts.map((d) => d.event?.payload ?? null)),
    shard, col((_, x) => x.replyTo), col((_, x) => json(x.poll)),
  ]);
  return drafts.map((d) => d.view);
}

/** One send, as the statement takes it: every value already computed, the connection's fields excepted. */
export interface SendInput {
  id: string;
  workspaceId: string;
  status: "queued" | "scheduled";
  recipient: string;
  body: string | null;
  media: string | null;
  location: string | null;
  context: string | null;
  metadata: string | null;
  contextSensitivity: string | null;
  sendAt: Date | null;
  timezone: string | null;
  createdAt: Date;
  idempotencyKey: string | null;
  fingerprint: Buffer | null;
  /** The 202 body; `from` is filled in from the connection. */
  view: MessageView;
  connectionSlug: string;
  deferred: boolean;
  /** The plan refuses a deferred send (no scheduling): nothing is written. */
  planRefuses: boolean;
  /** Messages a month, or null for no allowance. */
  allowance: number | null;
  event: { id: string; type: string; payload: unknown } | null;
  /** A reply: our id of the message it quotes. */
  replyTo?: string | null;
  /** A poll, as JSON. */
  poll?: string | null;
}

/** What the statement found and did for one send. */
export interface SendOutcome {
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

/** Sends in one statement (SEND_SQL), each decided on its own; the outcomes in the inputs' order. */
export async function writeSends(db: DataSource, inputs: SendInput[]): Promise<SendOutcome[]> {
  const col = <T>(f: (i: SendInput) => T): T[] => inputs.map(f);
  const rows = await prepared<SendOutcome & { n: string }>(db, "send-messages", SEND_SQL, [
    col((i) => i.id),
    col((i) => i.workspaceId),
    col((i) => i.status),
    col((i) => i.recipient),
    col((i) => i.body),
    col((i) => i.media),
    col((i) => i.location),
    col((i) => i.context),
    col((i) => i.metadata),
    col((i) => i.contextSensitivity),
    col((i) => i.sendAt),
    col((i) => i.timezone),
    col((i) => i.createdAt),
    usageShard(),
    col((i) => i.idempotencyKey),
    // The two large JSON values of each send as one JSON array each, not a jsonb[]: pg writes an
    // array parameter by escaping every quote of every element, which made these two a sixth of
    // all a send allocated (docs/performance.md).
    JSON.stringify(inputs.map((i) => i.view)),
    col((i) => i.connectionSlug),
    col((i) => i.fingerprint),
    col((i) => i.deferred),
    col((i) => i.planRefuses),
    col((i) => i.allowance),
    col((i) => i.event?.id ?? null),
    col((i) => i.event?.type ?? null),
    JSON.stringify(inputs.map((i) => i.event?.payload ?? null)),
    col((i) => i.replyTo ?? null),
    col((i) => i.poll ?? null),
  ]);
  const byIndex = new Map(rows.map((r) => [Number(r.n), r]));
  return inputs.map((_, i) => {
    const row = byIndex.get(i + 1);
    if (!row) throw new Error("the send statement returned no row for a send");
    return row;
  });
}

/**
 * The sends of `inputs` whose messages are already written, by id: a statement whose answer was
 * lost (the connection dropped after the server ran it) may have committed. Each is answered as
 * that statement would have answered it, accepted, from the row it wrote. Its own id, written only
 * by its own statement, is the proof: a send's id is new with each request.
 */
export async function writtenSends(db: DataSource, inputs: SendInput[]): Promise<Map<string, SendOutcome>> {
  const found = await rows<{ id: string; connection_id: string; sender: string | null }>(db, WRITTEN_SQL, [inputs.map((i) => i.id), inputs.map((i) => i.workspaceId)]);
  return new Map(
    found.map((m) => [
      m.id,
      { taken: true, accepted: true, prior_blocks: false, prior_fingerprint: null, prior_status: null, prior_body: null, used: 0, c_id: m.connection_id, c_state: null, c_phone: m.sender },
    ]),
  );
}

const WRITTEN_SQL = `SELECT m.id, m.connection_id, m.sender
    FROM unnest($1::text[], $2::text[]) AS x(id, workspace_id) JOIN messages m ON m.id = x.id AND m.workspace_id = x.workspace_id`;

/** A key's record that a new request may take over: one past retention. */
const TAKEOVER = (t: string) => `(${t}.created_at < now() - interval '${RETENTION_HOURS} hours')`;

/**
 * The sends of a batch: parameter $k is an array with one element per send (in SendInput's
 * order), but for $14, the usage shard every send of the statement counts on, and for $16 (the
 * views) and $24 (the events' payloads), one JSON array each.
 *
 * Rules, per send (the guard of `ok`; store/send-rules.ts explains a refusal afterwards): the
 * connection exists (and is connected unless the send is deferred), the plan allows it, the
 * month's allowance has room, and the key (if any) has no record that blocks it and its advisory
 * lock is free. Concurrent duplicates: the first holds a transaction-scoped advisory lock on its
 * key until it commits, and a duplicate that finds it taken writes nothing (409). The key's record
 * is inserted before the message and the message only if it was, so a duplicate that came after
 * the commit but read an older snapshot writes nothing either (ON CONFLICT sees the committed
 * record); it is run again and replays.
 */
const SEND_SQL = `WITH x AS (
    SELECT u.*, v.view, NULLIF(p.payload, 'null'::jsonb) AS payload
      FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::jsonb[], $7::jsonb[], $8::jsonb[], $9::jsonb[],
                  $10::text[], $11::timestamptz[], $12::text[], $13::timestamptz[], $15::text[],
                  $17::text[], $18::bytea[], $19::boolean[], $20::boolean[], $21::int[], $22::text[], $23::text[],
                  $25::text[], $26::jsonb[])
      WITH ORDINALITY AS u(id, workspace_id, status, recipient, body, media, location, context, metadata, context_sensitivity, send_at,
                           timezone, created_at, key, slug, fingerprint, deferred, plan_refuses, allowance,
                           event_id, event_type, reply_to, poll, n)
      JOIN jsonb_array_elements($16::jsonb) WITH ORDINALITY AS v(view, n) ON v.n = u.n
      JOIN jsonb_array_elements($24::jsonb) WITH ORDINALITY AS p(payload, n) ON p.n = u.n
  ), c AS (
    SELECT x.n, conn.id, conn.state, conn.phone
      FROM x JOIN connections conn ON conn.workspace_id = x.workspace_id AND conn.slug = x.slug AND conn.deleted_at IS NULL
  ), prior AS (
    -- Looked up by key, one send at a time (the LIMIT keeps the planner from joining the table
    -- whole): as a join, the statement's cached plan, made for "about 100 sends", hashed every
    -- record of the table while it held fewer than ~50,000 (docs/performance.md).
    SELECT x.n, p.fingerprint, p.response_status, p.response_body, NOT ${TAKEOVER("p")} AS blocks
      FROM x CROSS JOIN LATERAL (
        SELECT k.fingerprint, k.response_status, k.response_body, k.created_at FROM idempotency_keys k
         WHERE k.workspace_id = x.workspace_id AND k.key = x.key LIMIT 1) p
  ), lock AS (
    SELECT x.n, CASE WHEN x.key IS NULL THEN true
                     ELSE pg_try_advisory_xact_lock(hashtextextended('idempotency:' || x.workspace_id || ':' || x.key, 0)) END AS taken
      FROM x
  ), used AS (
    SELECT x.n, CASE WHEN x.allowance IS NULL THEN 0 ELSE ${monthOutboundSql("x.workspace_id")} END AS used
      FROM x
  ), ok AS (
    SELECT x.*, c.id AS connection_id, c.phone
      FROM x JOIN c ON c.n = x.n JOIN lock ON lock.n = x.n JOIN used ON used.n = x.n
     WHERE lock.taken AND NOT x.plan_refuses AND (x.deferred OR c.state = 'connected')
       AND (x.allowance IS NULL OR used.used < x.allowance)
       AND NOT EXISTS (SELECT 1 FROM prior WHERE prior.n = x.n AND prior.blocks)
  ), i AS (
    INSERT INTO idempotency_keys AS k (workspace_id, key, fingerprint, response_status, response_body, locked_until, created_at)
    SELECT ok.workspace_id, ok.key, ok.fingerprint, 202, jsonb_set(ok.view, '{from}', COALESCE(to_jsonb(ok.phone), 'null'::jsonb)), NULL, now()
      FROM ok WHERE ok.key IS NOT NULL
    ON CONFLICT (workspace_id, key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
           locked_until = NULL, created_at = now()
     WHERE ${TAKEOVER("k")}
    RETURNING k.workspace_id, k.key
  ), go AS (
    SELECT ok.n, ok.id, ok.workspace_id, ok.connection_id, ok.status, ok.recipient, ok.phone AS sender, ok.body, ok.media, ok.location,
           ok.context, ok.metadata, ok.context_sensitivity, ok.send_at, ok.timezone, NULL::text AS schedule_id, ok.created_at,
           NULL::text AS error_code, NULL::text AS error_message, ok.event_id, ok.event_type, ok.payload, ok.reply_to, ok.poll
      FROM ok WHERE ok.key IS NULL OR EXISTS (SELECT 1 FROM i WHERE i.workspace_id = ok.workspace_id AND i.key = ok.key)
  ), ${acceptedWrites("$14")}
  SELECT x.n, lock.taken, EXISTS (SELECT 1 FROM go WHERE go.n = x.n) AS accepted, used.used,
         COALESCE(prior.blocks, false) AS prior_blocks, prior.fingerprint AS prior_fingerprint,
         prior.response_status AS prior_status, prior.response_body AS prior_body,
         c.id AS c_id, c.state AS c_state, c.phone AS c_phone
    FROM x JOIN lock ON lock.n = x.n JOIN used ON used.n = x.n LEFT JOIN prior ON prior.n = x.n LEFT JOIN c ON c.n = x.n`;

export function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
