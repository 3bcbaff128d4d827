// Keeps the Idempotency-Key records bounded: those past their retention no longer deduplicate
// anything (a send with such a key takes the record over) and are removed every hour.
import type { AppContext } from "../server/context.js";
import { purgeExpiredIdempotencyKeys } from "../server/http/idempotency.js";
import { IDEMPOTENCY_PRUNE_JOB } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function idempotencyPruneJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: IDEMPOTENCY_PRUNE_JOB,
    concurrency: 1,
    lockLifetimeMs: 10 * 60_000,
    async run() {
      await purgeExpiredIdempotencyKeys(ctx.db);
    },
  };
}
