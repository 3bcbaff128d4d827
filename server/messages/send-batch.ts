// Sends, written together. Every send that reaches the database in the same turn of the event
// loop joins one statement (SEND_SQL): under load, one round trip, one plan and one commit serve
// many sends, and each is still decided on its own — its own connection, Idempotency-Key record,
// lock and usage — and written only if every rule holds for it. At most MAX_IN_FLIGHT statements
// run at once (each on its own pooled connection); sends arriving meanwhile join the next one.
import type { DataSource } from "typeorm";
import { prepared } from "../db/prepared.js";
import { EVENT_INSERT_COLUMNS } from "../events/record.js";
import { RETENTION_HOURS } from "../http/idempotency.js";
import { usageShard } from "../workspace/usage.js";

/** Most sends in one statement. */
const MAX_BATCH = 64;
/** Most statements in flight at once (each holds one pooled connection until it commits). */
const MAX_IN_FLIGHT = 4;

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
  /** Timeline statuses, in order. */
  timeline: string[];
  idempotencyKey: string | null;
  fingerprint: Buffer | null;
  /** The 202 body; `from` is filled in from the connection. */
  view: string;
  connectionSlug: string;
  deferred: boolean;
  /** The plan refuses a deferred send (no scheduling): nothing is written. */
  planRefuses: boolean;
  /** Messages a month, or null for no allowance. */
  allowance: number | null;
  event: { id: string; type: string; payload: string } | null;
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

interface Waiting {
  input: SendInput;
  resolve: (outcome: SendOutcome) => void;
  reject: (err: unknown) => void;
}

export class SendBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly db: DataSource) {}

  send(input: SendInput): Promise<SendOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    // After the current turn: the requests parsed in it join the same statement.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length && this.inFlight < MAX_IN_FLIGHT) {
      const batch: Waiting[] = [];
      const keys = new Set<string>();
      const rest: Waiting[] = [];
      for (const w of this.queue) {
        const key = w.input.idempotencyKey === null ? null : `${w.input.workspaceId}\n${w.input.idempotencyKey}`;
        // The same key twice in one statement would hold its lock twice: the second waits.
        if (batch.length >= MAX_BATCH || (key !== null && keys.has(key))) rest.push(w);
        else {
          batch.push(w);
          if (key !== null) keys.add(key);
        }
      }
      this.queue = rest;
      this.inFlight++;
      void this.run(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length) this.schedule();
      });
    }
  }

  private async run(batch: Waiting[]): Promise<void> {
    try {
      const outcomes = await this.write(batch.map((w) => w.input));
      batch.forEach((w, i) => w.resolve(outcomes[i]!));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // Whatever failed the statement fails only the send it came from.
      for (const w of batch) {
        await this.write([w.input]).then((o) => w.resolve(o[0]!), w.reject);
      }
    }
  }

  private async write(inputs: SendInput[]): Promise<SendOutcome[]> {
    const col = <T>(f: (i: SendInput) => T): T[] => inputs.map(f);
    const rows = await prepared<SendOutcome & { n: string }>(this.db, "send-messages", SEND_SQL, [
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
      col((i) => i.timeline.join(",")),
      usageShard(),
      col((i) => i.idempotencyKey),
      col((i) => i.view),
      col((i) => i.connectionSlug),
      col((i) => i.fingerprint),
      col((i) => i.deferred),
      col((i) => i.planRefuses),
      col((i) => i.allowance),
      col((i) => i.event?.id ?? null),
      col((i) => i.event?.type ?? null),
      col((i) => i.event?.payload ?? null),
    ]);
    const byIndex = new Map(rows.map((r) => [Number(r.n), r]));
    return inputs.map((_, i) => {
      const row = byIndex.get(i + 1);
      if (!row) throw new Error("the send statement returned no row for a send");
      return row;
    });
  }
}

/** A key's record that a new request may take over: one past retention. */
const TAKEOVER = (t: string) => `(${t}.created_at < now() - interval '${RETENTION_HOURS} hours')`;

/**
 * The sends of a batch: parameter $k is an array with one element per send (in SendInput's
 * order), but for $15, the usage shard every send of the statement counts on.
 *
 * Rules, per send: the connection exists (and is connected unless the send is deferred), the plan
 * allows it, the month's allowance has room, and the key (if any) has no record that blocks it
 * and its advisory lock is free. Concurrent duplicates: the first holds a transaction-scoped
 * advisory lock on its key until it commits, and a duplicate that finds it taken writes nothing
 * (409). The key's record is inserted before the message and the message only if it was, so a
 * duplicate that came after the commit but read an older snapshot writes nothing either
 * (ON CONFLICT sees the committed record); it is run again and replays. Usage rows are taken in
 * workspace order, one per workspace, so two statements cannot deadlock on them.
 */
const SEND_SQL = `WITH x AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::jsonb[], $7::jsonb[], $8::jsonb[], $9::jsonb[],
                         $10::text[], $11::timestamptz[], $12::text[], $13::timestamptz[], $14::text[], $16::text[], $17::jsonb[],
                         $18::text[], $19::bytea[], $20::boolean[], $21::boolean[], $22::int[], $23::text[], $24::text[], $25::jsonb[])
      WITH ORDINALITY AS x(id, workspace_id, status, recipient, body, media, location, context, metadata, context_sensitivity, send_at,
                           timezone, created_at, timeline, key, view, slug, fingerprint, deferred, plan_refuses, allowance,
                           event_id, event_type, payload, n)
  ), c AS (
    SELECT x.n, conn.id, conn.state, conn.phone
      FROM x JOIN connections conn ON conn.workspace_id = x.workspace_id AND conn.slug = x.slug AND conn.deleted_at IS NULL
  ), prior AS (
    SELECT x.n, p.fingerprint, p.response_status, p.response_body, NOT ${TAKEOVER("p")} AS blocks
      FROM x JOIN idempotency_keys p ON p.workspace_id = x.workspace_id AND p.key = x.key
  ), lock AS (
    SELECT x.n, CASE WHEN x.key IS NULL THEN true
                     ELSE pg_try_advisory_xact_lock(hashtextextended('idempotency:' || x.workspace_id || ':' || x.key, 0)) END AS taken
      FROM x
  ), used AS (
    SELECT x.n, CASE WHEN x.allowance IS NULL THEN 0 ELSE (
             SELECT COALESCE(sum(u.messages_outbound), 0)::int FROM usage_daily u
              WHERE u.workspace_id = x.workspace_id AND u.day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date) END AS used
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
    SELECT ok.* FROM ok WHERE ok.key IS NULL OR EXISTS (SELECT 1 FROM i WHERE i.workspace_id = ok.workspace_id AND i.key = ok.key)
  ), m AS (
    INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body, media, location,
                          context, metadata, context_sensitivity, send_at, timezone, created_at, updated_at)
    SELECT id, workspace_id, connection_id, 'outbound', status, recipient, phone, body, media, location,
           context, metadata, context_sensitivity, send_at, timezone, created_at, created_at
      FROM go
  ), t AS (
    INSERT INTO message_timeline (message_id, status, at, detail)
    SELECT go.id, s.status, go.created_at, NULL FROM go, unnest(string_to_array(go.timeline, ',')) WITH ORDINALITY AS s(status, k)
     ORDER BY go.n, s.k
  ), d AS (
    INSERT INTO dispatch_queue (message_id, connection_id, available_at) SELECT id, connection_id, created_at FROM go WHERE status = 'queued'
  ), u AS (
    INSERT INTO usage_daily (workspace_id, day, shard, messages_outbound)
    SELECT workspace_id, (now() AT TIME ZONE 'UTC')::date, $15, count(*) FROM go GROUP BY workspace_id ORDER BY workspace_id
    ON CONFLICT (workspace_id, day, shard) DO UPDATE SET messages_outbound = usage_daily.messages_outbound + EXCLUDED.messages_outbound
  ), e AS (
    INSERT INTO events ${EVENT_INSERT_COLUMNS}
    SELECT event_id, workspace_id, event_type, connection_id, jsonb_set(payload, '{data,from}', COALESCE(to_jsonb(phone), 'null'::jsonb)), created_at
      FROM go WHERE event_type IS NOT NULL
  )
  SELECT x.n, lock.taken, EXISTS (SELECT 1 FROM go WHERE go.n = x.n) AS accepted, used.used,
         COALESCE(prior.blocks, false) AS prior_blocks, prior.fingerprint AS prior_fingerprint,
         prior.response_status AS prior_status, prior.response_body AS prior_body,
         c.id AS c_id, c.state AS c_state, c.phone AS c_phone
    FROM x JOIN lock ON lock.n = x.n JOIN used ON used.n = x.n LEFT JOIN prior ON prior.n = x.n LEFT JOIN c ON c.n = x.n`;
