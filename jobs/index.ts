// Every Agenda job of the gateway, defined in one place before the runner starts.
import type { AppContext } from "../server/context.js";
import { messageReleaseJob, scheduledSweepJob } from "./message-release.js";
import { idempotencyPruneJob } from "./idempotency-prune.js";
import { aiRunJob, aiSweepJob } from "./ai-run.js";
import { eventsPruneJob } from "./events-prune.js";
import { AI_SWEEP_JOB, EVENTS_PRUNE_JOB, IDEMPOTENCY_PRUNE_JOB, MESSAGES_SWEEP_JOB, OAUTH_PRUNE_JOB, RATE_LIMIT_PRUNE_JOB, WEBHOOK_PRUNE_JOB } from "./names.js";
import { oauthPruneJob } from "./oauth-prune.js";
import { rateLimitPruneJob } from "./rate-limit-prune.js";
import { purgeConnectionJob } from "./purge-connection.js";
import { webhookPruneJob } from "./webhook-prune.js";
import { webhookRetryJob } from "./webhook-retry.js";
import { scheduleFireJobs, scheduleScheduleFiring } from "./schedule-fire.js";

export async function defineJobs(ctx: AppContext): Promise<void> {
  ctx.jobs.define(messageReleaseJob(ctx));
  ctx.jobs.define(scheduledSweepJob(ctx));
  ctx.jobs.define(purgeConnectionJob(ctx));
  ctx.jobs.define(webhookRetryJob(ctx));
  ctx.jobs.define(webhookPruneJob(ctx));
  ctx.jobs.define(idempotencyPruneJob(ctx));
  ctx.jobs.define(oauthPruneJob(ctx));
  ctx.jobs.define(rateLimitPruneJob(ctx));
  ctx.jobs.define(eventsPruneJob(ctx));
  ctx.jobs.define(aiRunJob(ctx));
  ctx.jobs.define(aiSweepJob(ctx));
  for (const job of scheduleFireJobs(ctx)) ctx.jobs.define(job);
}

/** Recurring jobs, registered once the runner has started (Agenda keeps one row per name). */
export async function scheduleRecurringJobs(ctx: AppContext): Promise<void> {
  await ctx.jobs.agenda.every("1 minute", MESSAGES_SWEEP_JOB, {}, { skipImmediate: false } as never);
  await ctx.jobs.agenda.every("1 hour", WEBHOOK_PRUNE_JOB, {}, { skipImmediate: false } as never);
  await ctx.jobs.agenda.every("1 hour", IDEMPOTENCY_PRUNE_JOB, {}, { skipImmediate: false } as never);
  await ctx.jobs.agenda.every("1 hour", OAUTH_PRUNE_JOB, {}, { skipImmediate: false } as never);
  await ctx.jobs.agenda.every("1 hour", RATE_LIMIT_PRUNE_JOB, {}, { skipImmediate: false } as never);
  await ctx.jobs.agenda.every("1 hour", EVENTS_PRUNE_JOB, {}, { skipImmediate: false } as never);
  await ctx.jobs.agenda.every("1 minute", AI_SWEEP_JOB, {}, { skipImmediate: false } as never);
  // And once now: a process that starts after a crash picks up the debounce rows the crash left.
  await ctx.jobs.agenda.now(AI_SWEEP_JOB, {});
  await scheduleScheduleFiring(ctx);
}
