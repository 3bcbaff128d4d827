// Keeps the rate-limit windows bounded: every window is a day long at most, so one that began more
// than a day ago counts nothing any more and is removed every hour.
import type { AppContext } from "../server/context.js";
import { DatabaseRateLimiter } from "../server/http/rate-limit.js";
import { RATE_LIMIT_PRUNE_JOB } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function rateLimitPruneJob(ctx: AppContext): JobDefinition<unknown> {
  const limiter = new DatabaseRateLimiter(ctx.db);
  return {
    name: RATE_LIMIT_PRUNE_JOB,
    concurrency: 1,
    lockLifetimeMs: 10 * 60_000,
    async run() {
      await limiter.purgeExpired();
    },
  };
}
