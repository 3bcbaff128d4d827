// The reports the sandbox owes the gateway. They are rows first (written with the change that
// causes them), then posted over real HTTP to the gateway's callback URL, a connection's due
// reports together as one batch in due order, until the gateway acknowledges them: a gateway that is down or restarting loses nothing. Several processes
// may poll the same table; a claim locks rows for a while, so a poller that dies hands them on.
// Every statement that queues a report or moves its due time NOTIFYs svc_sandbox_reports
// (migration 1732262100000): with LISTEN up, an idle outbox sleeps until its next report is due.
import type { DataSource } from "typeorm";
import { backoffMs } from "../../backoff.js";
import { retryWhileUnavailable } from "../../db/availability.js";
import type { DatabaseListener } from "../../db/listener.js";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import { PollingLoop } from "../../polling-loop.js";

/** Every statement that adds to sandbox_callbacks or moves a row's due_at NOTIFYs this. */
export const SANDBOX_REPORTS_CHANNEL = "svc_sandbox_reports";
const BATCH = 1000;
/** Most reports in one post (the callback route takes up to 500). */
const POST_MAX = 500;
const IDLE_MS = 100;
const CLAIM_SECONDS = 30;
const POST_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;
/** After this many failed posts (about a quarter of an hour) a report is dropped and logged. */
const MAX_ATTEMPTS = 100;

/** Reports `cb` that may be posted now: a session stopped by a suspend holds all but its state reports. */
const NOT_HELD = `(cb.kind = 'connection.state'
                   OR NOT EXISTS (SELECT 1 FROM sandbox_sessions s WHERE s.connection_id = cb.connection_id AND NOT s.running))`;

/** Where to post a connection's reports; null when the connection no longer exists. */
export type CallbackUrlResolver = (connectionId: string) => Promise<string | null>;

interface Claimed {
  id: string;
  connection_id: string;
  event: Record<string, unknown>;
  attempts: number;
}

export class CallbackOutbox {
  private readonly loop: PollingLoop;

  constructor(
    private readonly db: DataSource,
    private readonly logger: Logger,
    private readonly callbackUrlFor: CallbackUrlResolver,
    listener?: DatabaseListener,
  ) {
    this.loop = new PollingLoop({
      tick: () => this.tick(),
      full: (n) => n >= BATCH,
      idleMs: IDLE_MS,
      ...(listener && { notifiedBy: { listener, channel: SANDBOX_REPORTS_CHANNEL }, dueIn: () => this.dueIn() }),
      logger,
      errorMessage: "sandbox callback poll failed",
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Finishes the post in flight; unsent rows stay for the next start. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /**
   * Milliseconds until the earliest report that a claim could take falls due (null: none). Reports
   * held by a stopped session wait for its start, which wakes the outbox of the process starting it.
   */
  private async dueIn(): Promise<number | null> {
    const [row] = await rows<{ ms: number | null }>(
      this.db,
      `SELECT (EXTRACT(EPOCH FROM min(GREATEST(cb.due_at, cb.locked_until)) - now()) * 1000)::float8 AS ms
         FROM sandbox_callbacks cb
        WHERE ${NOT_HELD}`,
    );
    return row?.ms ?? null;
  }

  /** Posts what is due (sessions stopped by a suspend hold all but state reports); returns how many. */
  private async tick(): Promise<number> {
    const claimed = await rows<Claimed>(
      this.db,
      `UPDATE sandbox_callbacks c
          SET locked_until = now() + ($2 || ' seconds')::interval, attempts = c.attempts + 1
        WHERE c.id IN (
              SELECT cb.id FROM sandbox_callbacks cb
               WHERE cb.due_at <= now() AND (cb.locked_until IS NULL OR cb.locked_until < now())
                 AND ${NOT_HELD}
                 -- In order per connection: nothing passes a report of its connection that is
                 -- in flight or waiting to be retried (a failed post moves its due time on).
                 AND NOT EXISTS (SELECT 1 FROM sandbox_callbacks e
                                  WHERE e.connection_id = cb.connection_id AND e.id < cb.id AND e.attempts > 0
                                    AND (e.due_at > now() OR e.locked_until >= now()))
               ORDER BY cb.due_at, cb.id
               LIMIT $1
               FOR UPDATE SKIP LOCKED)
        RETURNING c.id, c.connection_id, c.event, c.attempts`,
      [BATCH, String(CLAIM_SECONDS)],
    );
    // A connection's reports in the order they were written: a retried report's later due time
    // must not put it behind one written after it.
    claimed.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
    // A connection's reports go in one request, in due order; connections in parallel.
    const byConnection = new Map<string, Claimed[]>();
    for (const row of claimed) {
      const reports = byConnection.get(row.connection_id);
      if (reports) reports.push(row);
      else byConnection.set(row.connection_id, [row]);
    }
    const unposted: string[] = [];
    await Promise.all(
      [...byConnection.values()].map(async (reports) => {
        // Shutting down, or an earlier chunk of this connection to be retried: hand the rest back
        // at once (rather than when their lock expires), so that they stay behind it in order.
        let posting = true;
        for (let i = 0; i < reports.length; i += POST_MAX) {
          const chunk = reports.slice(i, i + POST_MAX);
          if (posting && this.loop.running) posting = await this.deliver(chunk);
          else unposted.push(...chunk.map((r) => r.id));
        }
      }),
    );
    if (unposted.length) {
      // Handed back due now, and the other processes told so in the same statement (a claim's
      // release moves no due time, so the trigger does not notify).
      await this.write(
        `WITH released AS (UPDATE sandbox_callbacks SET locked_until = NULL, attempts = attempts - 1 WHERE id = ANY($1::bigint[]))
         SELECT pg_notify($2, '')`,
        [unposted, SANDBOX_REPORTS_CHANNEL],
      );
    }
    return claimed.length;
  }

  /**
   * Posts one connection's reports as one batch; acknowledged, they are deleted, else retried
   * together. False when they are to be retried later.
   */
  private async deliver(reports: Claimed[]): Promise<boolean> {
    const url = await retryWhileUnavailable(() => this.callbackUrlFor(reports[0]!.connection_id), CLAIM_SECONDS * 1000);
    if (!url) {
      await this.drop(reports, "the connection no longer exists");
      return true;
    }
    const ids = reports.map((r) => r.id);
    let failure: string;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ events: reports.map((r) => r.event) }),
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.ok) {
        await this.write(`DELETE FROM sandbox_callbacks WHERE id = ANY($1::bigint[])`, [ids]);
        return true;
      }
      // 404: the gateway no longer knows the connection (deleted); 4xx: a report it will never
      // take. In a batch, find it by posting the reports one by one: only it is dropped.
      if (res.status >= 400 && res.status < 500 && res.status !== 429) {
        if (res.status !== 404 && reports.length > 1) {
          for (const report of reports) await this.deliver([report]);
          return true;
        }
        await this.drop(reports, `the gateway answered ${res.status}: ${text.slice(0, 300)}`, res.status !== 404);
        return true;
      }
      failure = `HTTP ${res.status}`;
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    const attempts = Math.max(...reports.map((r) => r.attempts));
    if (attempts >= MAX_ATTEMPTS) {
      await this.drop(reports, `gave up after ${attempts} attempts: ${failure}`, true);
      return true;
    }
    const backoff = backoffMs(attempts, 250, MAX_BACKOFF_MS, { jitter: 0 });
    await this.write(
      `UPDATE sandbox_callbacks SET due_at = now() + ($2 || ' milliseconds')::interval, locked_until = NULL, last_error = $3 WHERE id = ANY($1::bigint[])`,
      [ids, String(backoff), failure],
    );
    return false;
  }

  private async drop(reports: Claimed[], reason: string, loud = false): Promise<void> {
    for (const row of reports) {
      const entry = { connection_id: row.connection_id, event_type: row.event.type, event_id: row.event.event_id, reason };
      if (loud) this.logger.error(entry, "sandbox dropped a callback");
      else this.logger.debug(entry, "sandbox dropped a callback");
    }
    await this.write(`DELETE FROM sandbox_callbacks WHERE id = ANY($1::bigint[])`, [reports.map((r) => r.id)]);
  }

  /**
   * Settles claimed rows (acknowledged, released, rescheduled). Through a database outage the
   * write is retried while the claim holds, so the reports move on as soon as the database is
   * back instead of when their lock expires; each of these writes is safe to repeat.
   */
  private async write(sql: string, params: unknown[]): Promise<void> {
    await retryWhileUnavailable(() => this.db.query(sql, params), CLAIM_SECONDS * 1000);
  }
}
