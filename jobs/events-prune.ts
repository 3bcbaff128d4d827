// Keeps the event log to EVENTS_RETENTION_DAYS (30 by default): events recorded before that are
// removed, in batches so no statement holds locks for long (their webhook deliveries go with
// them; retries end within two days, and the retention is at least three). Idempotent.
import type { DataSource } from "typeorm";
import type { AppContext } from "../server/context.js";
import type { JobDefinition } from "./runner.js";
import { rows } from "../server/db/rows.js";
import { EVENTS_PRUNE_JOB } from "./names.js";

const BATCH = 5_000;

export function eventsPruneJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: EVENTS_PRUNE_JOB,
    concurrency: 1,
    lockLifetimeMs: 10 * 60_000,
    async run() {
      await pruneEvents(ctx.db, ctx.config.events.retentionDays);
    },
  };
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
