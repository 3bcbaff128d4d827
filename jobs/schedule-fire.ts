// Firing schedules with Agenda. A few recurring "lane" jobs, each every few seconds, each run
// draining due schedules (server/schedules/firing.ts) until none is left. Agenda locks a lane to
// one process at a time, so with several gateway processes the lanes spread over them; which lane
// fires which schedule does not matter, because every fire claims its schedule row with
// FOR UPDATE SKIP LOCKED and records its occurrence under a primary key. One Agenda job per
// schedule would cap a burst near Agenda's own throughput (stack-notes: ~740 jobs/s) and need its
// jobs kept in step with pause, resume and cancel; the table as the queue has neither problem.
import type { AppContext } from "../server/context.js";
import { scheduleFireJobName } from "./names.js";
import type { JobDefinition } from "./runner.js";

/** Recurring lanes; each may run on a different process. */
export const SCHEDULE_FIRE_LANES = 4;
/** The embedded database is one backend that runs one transaction at a time: one lane, one worker there. */
const EMBEDDED_LANES = 1;
/** How often each lane looks for due schedules; lanes drift apart, so one looks far more often. */
export const SCHEDULE_FIRE_INTERVAL = "3 seconds";
/** A lane run stops claiming after this long and leaves the rest to the next run. */
const RUN_BUDGET_MS = 10_000;

function lanes(ctx: AppContext): number {
  return ctx.config.databaseUrl ? SCHEDULE_FIRE_LANES : EMBEDDED_LANES;
}

export function scheduleFireJobs(ctx: AppContext): JobDefinition<unknown>[] {
  const workers = ctx.config.databaseUrl ? 2 : 1;
  return Array.from({ length: lanes(ctx) }, (_, lane) => ({
    name: scheduleFireJobName(lane),
    concurrency: 1,
    lockLifetimeMs: 3 * RUN_BUDGET_MS,
    async run() {
      await ctx.services.scheduleFiring.fireDue({ workers, budgetMs: RUN_BUDGET_MS, shouldStop: () => !ctx.jobs.ready });
    },
  }));
}

export async function scheduleScheduleFiring(ctx: AppContext): Promise<void> {
  for (let lane = 0; lane < lanes(ctx); lane++) {
    await ctx.jobs.agenda.every(SCHEDULE_FIRE_INTERVAL, scheduleFireJobName(lane), {}, { skipImmediate: false });
  }
}
