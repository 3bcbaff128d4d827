// Every Agenda job of the gateway, defined in one place before the runner starts.
import type { AppContext } from "../server/context.js";
import { messageReleaseJob } from "./message-release.js";
import { aiRunJob } from "./ai-run.js";
import { PRUNE_JOB, RETIRED_JOBS } from "./names.js";
import { pruneJob } from "./prune.js";
import { purgeConnectionJob } from "./purge-connection.js";
import { webhookRetryJob } from "./webhook-retry.js";
import { scheduleFireJobs, scheduleScheduleFiring } from "./schedule-fire.js";

export async function defineJobs(ctx: AppContext): Promise<void> {
  ctx.jobs.define(messageReleaseJob(ctx));
  ctx.jobs.define(purgeConnectionJob(ctx));
  ctx.jobs.define(webhookRetryJob(ctx));
  ctx.jobs.define(pruneJob(ctx.db, ctx.config.events.retentionDays));
  ctx.jobs.define(aiRunJob(ctx));
  for (const job of scheduleFireJobs(ctx)) ctx.jobs.define(job);
}

/** Recurring jobs, registered once the runner has started (Agenda keeps one row per name). */
export async function scheduleRecurringJobs(ctx: AppContext): Promise<void> {
  await ctx.jobs.agenda.cancel({ names: RETIRED_JOBS });
  await ctx.jobs.agenda.every("1 hour", PRUNE_JOB, {}, { skipImmediate: false });
  await scheduleScheduleFiring(ctx);
}
