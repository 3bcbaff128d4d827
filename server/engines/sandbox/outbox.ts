// The reports the sandbox owes the gateway. They are rows first (written with the change that
// causes them), then posted over real HTTP to the gateway's callback URL, in due order, until the
// gateway acknowledges them: a gateway that is down or restarting loses nothing. Several processes
// may poll the same table; a claim locks rows for a while, so a poller that dies hands them on.
import type { DataSource } from "typeorm";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import { PollingLoop } from "../../polling-loop.js";

const BATCH = 200;
const IDLE_MS = 100;
const CLAIM_SECONDS = 30;
const POST_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;
/** After this many failed posts (about a quarter of an hour) a report is dropped and logged. */
const MAX_ATTEMPTS = 100;

/** Where to post a connection's reports; null when the connection no longer exists. */
export type CallbackUrlResolver = (connectionId: string) => Promise<string | null>;

interface Claimed {
  id: string;
  connection_id: string;
  event: Record<string, unknown>;
  attempts: number;
  due_at: Date;
}

export class CallbackOutbox {
  private readonly loop: PollingLoop;

  constructor(
    private readonly db: DataSource,
    private readonly logger: Logger,
    private readonly callbackUrlFor: CallbackUrlResolver,
  ) {
    this.loop = new PollingLoop({
      tick: () => this.tick(),
      full: (n) => n >= BATCH,
      idleMs: IDLE_MS,
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

  /** Posts what is due (sessions stopped by a suspend hold all but state reports); returns how many. */
  private async tick(): Promise<number> {
    const claimed = await rows<Claimed>(
      this.db,
      `UPDATE sandbox_callbacks c
          SET locked_until = now() + ($2 || ' seconds')::interval, attempts = c.attempts + 1
        WHERE c.id IN (
              SELECT cb.id FROM sandbox_callbacks cb
               WHERE cb.due_at <= now() AND (cb.locked_until IS NULL OR cb.locked_until < now())
                 AND (cb.kind = 'connection.state'
                      OR NOT EXISTS (SELECT 1 FROM sandbox_sessions s WHERE s.connection_id = cb.connection_id AND NOT s.running))
               ORDER BY cb.due_at, cb.id
               LIMIT $1
               FOR UPDATE SKIP LOCKED)
        RETURNING c.id, c.connection_id, c.event, c.attempts, c.due_at`,
      [BATCH, String(CLAIM_SECONDS)],
    );
    claimed.sort((a, b) => new Date(a.due_at).getTime() - new Date(b.due_at).getTime() || Number(BigInt(a.id) - BigInt(b.id)));
    // Reports of one message (or one connection's state) go in order; different ones in parallel.
    const lanes = new Map<string, Claimed[]>();
    for (const row of claimed) {
      const event = row.event as { message_id?: string; provider_message_id?: string };
      const lane = `${row.connection_id}:${event.message_id ?? event.provider_message_id ?? "state"}`;
      lanes.set(lane, [...(lanes.get(lane) ?? []), row]);
    }
    const unposted: string[] = [];
    await Promise.all(
      [...lanes.values()].map(async (lane) => {
        for (const row of lane) {
          // Shutting down: hand the unposted claims back at once rather than when their lock expires.
          if (!this.loop.running) unposted.push(row.id);
          else await this.deliver(row);
        }
      }),
    );
    if (unposted.length) {
      await this.db.query(`UPDATE sandbox_callbacks SET locked_until = NULL, attempts = attempts - 1 WHERE id = ANY($1::bigint[])`, [unposted]);
    }
    return claimed.length;
  }

  private async deliver(row: Claimed): Promise<void> {
    const url = await this.callbackUrlFor(row.connection_id);
    if (!url) return this.drop(row, "the connection no longer exists");
    let failure: string;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(row.event),
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.ok) {
        await this.db.query(`DELETE FROM sandbox_callbacks WHERE id = $1`, [row.id]);
        return;
      }
      // 404: the gateway no longer knows the connection (deleted); 4xx: a report it will never take.
      if (res.status >= 400 && res.status < 500 && res.status !== 429) {
        return this.drop(row, `the gateway answered ${res.status}: ${text.slice(0, 300)}`, res.status !== 404);
      }
      failure = `HTTP ${res.status}`;
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (row.attempts >= MAX_ATTEMPTS) return this.drop(row, `gave up after ${row.attempts} attempts: ${failure}`, true);
    const backoff = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(row.attempts - 1, 10));
    await this.db.query(
      `UPDATE sandbox_callbacks SET due_at = now() + ($2 || ' milliseconds')::interval, locked_until = NULL, last_error = $3 WHERE id = $1`,
      [row.id, String(backoff), failure],
    );
  }

  private async drop(row: Claimed, reason: string, loud = false): Promise<void> {
    const entry = { connection_id: row.connection_id, event_type: row.event.type, event_id: row.event.event_id, reason };
    if (loud) this.logger.error(entry, "sandbox dropped a callback");
    else this.logger.debug(entry, "sandbox dropped a callback");
    await this.db.query(`DELETE FROM sandbox_callbacks WHERE id = $1`, [row.id]);
  }
}
