// Every Agenda job of the gateway, defined in one place before the runner starts.
import type { AppContext } from "../server/context.js";
import { messageReleaseJob, scheduledSweepJob } from "./message-release.js";
import { aiRunJob, aiSweepJob } from "./ai-run.js";
import { AI_SWEEP_JOB, MESSAGES_SWEEP_JOB, PRUNE_JOB, RETIRED_JOBS } from "./names.js";
import { pruneJob } from "./prune.js";
import { purgeConnectionJob } from "./purge-connection.js";
import { webhookRetryJob } from "./webhook-retry.js";
import { scheduleFireJobs, scheduleScheduleFiring } from "./schedule-fire.js";

export async function defineJobs(ctx: AppContext): Promise<void> {
  ctx.jobs.define(messageReleaseJob(ctx));
  ctx.jobs.define(scheduledSweepJob(ctx));
  ctx.jobs.define(purgeConnectionJob(ctx));
  ctx.jobs.define(webhookRetryJob(ctx));
  ctx.jobs.define(pruneJob(ctx.db));
  ctx.jobs.define(aiRunJob(ctx));
  ctx.jobs.define(aiSweepJob(ctx));
  for (const job of scheduleFireJobs(ctx)) ctx.jobs.define(job);
}

/** Recurring jobs, registered once the runner has started (Agenda keeps one row per name). */
export async function scheduleRecurringJobs(ctx: AppContext): Promise<void> {
  await ctx.jobs.agenda.every("1 minute", MESSAGES_SWEEP_JOB, {}, { skipImmediate: false });
  await ctx.jobs.agenda.cancel({ names: RETIRED_JOBS });
  await ctx.jobs.agenda.every("1 hour", PRUNE_JOB, {}, { skipImmediate: false });
  await ctx.jobs.agenda.every("1 minute", AI_SWEEP_JOB, {}, { skipImmediate: false });
  // And once now: a process that starts after a crash picks up the debounce rows the crash left.
  await ctx.jobs.agenda.now(AI_SWEEP_JOB, {});
  await scheduleScheduleFiring(ctx);
}
