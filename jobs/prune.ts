// Keeps the tables that only grow bounded, once an hour, each part idempotent:
// - Idempotency-Key records past their retention (they no longer deduplicate anything: a send
//   with such a key takes the record over);
// - the authorization server's leftovers: registrations nobody approved within a day, approvals
//   never exchanged, expired codes and tokens (server/oauth/clients.ts says which);
// - rate-limit windows that began more than a day ago (no window is longer, so they count nothing);
// - webhook deliveries that finished (succeeded, failed, canceled) more than 30 days ago, with
//   their attempts, in batches so no statement holds locks for long; pending ones are never touched;
// - events recorded more than EVENTS_RETENTION_DAYS ago (30 by default), in batches (their webhook
//   deliveries go with them; retries end within two days, and the retention is at least three).
import type { DataSource } from "typeorm";
import { purgeExpiredIdempotencyKeys } from "../server/http/idempotency.js";
import { DatabaseRateLimiter } from "../server/http/rate-limit.js";
import { pruneOAuth } from "../server/oauth/clients.js";
import { rows } from "../server/db/rows.js";
import { PRUNE_JOB } from "./names.js";
import type { JobDefinition } from "./runner.js";

export const DELIVERY_RETENTION_DAYS = 30;
const BATCH = 5_000;

export function pruneJob(db: DataSource, eventRetentionDays: number): JobDefinition<unknown> {
  const limiter = new DatabaseRateLimiter(db);
  return {
    name: PRUNE_JOB,
    concurrency: 1,
    lockLifetimeMs: 10 * 60_000,
    async run() {
      await purgeExpiredIdempotencyKeys(db);
      await pruneOAuth(db);
      await limiter.purgeExpired();
      await pruneDeliveries(db);
      await pruneEvents(db, eventRetentionDays);
    },
  };
}

/** Returns how many deliveries were removed. */
export async function pruneDeliveries(db: DataSource, retentionDays = DELIVERY_RETENTION_DAYS): Promise<number> {
  let removed = 0;
  for (;;) {
    const deleted = await rows(
      db,
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
          WHERE status <> 'pending' AND completed_at < now() - ($1 || ' days')::interval
          LIMIT $2)
       RETURNING 1`,
      [String(retentionDays), BATCH],
    );
    removed += deleted.length;
    if (deleted.length < BATCH) return removed;
  }
}

/** Returns how many events were removed. */
export async function pruneEvents(db: DataSource, retentionDays: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const deleted = await rows(
      db,
      `DELETE FROM events WHERE id IN (
         SELECT id FROM events WHERE created_at < now() - make_interval(days => $1) LIMIT $2)
       RETURNING 1`,
      [retentionDays, BATCH],
    );
    removed += deleted.length;
    if (deleted.length < BATCH) return removed;
  }
}
