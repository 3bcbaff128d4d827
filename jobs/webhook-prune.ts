// Keeps the delivery log bounded: deliveries that finished (succeeded, failed, canceled) more than
// 30 days ago are removed with their attempts, in batches so no statement holds locks for long.
// Idempotent; the pending ones are never touched.
import type { DataSource } from "typeorm";
import type { AppContext } from "../server/context.js";
import type { JobDefinition } from "./runner.js";
import { rows } from "../server/db/rows.js";
import { WEBHOOK_PRUNE_JOB } from "./names.js";

export const DELIVERY_RETENTION_DAYS = 30;
const BATCH = 5_000;

export function webhookPruneJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: WEBHOOK_PRUNE_JOB,
    concurrency: 1,
    lockLifetimeMs: 10 * 60_000,
    async run() {
      await pruneDeliveries(ctx.db);
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
