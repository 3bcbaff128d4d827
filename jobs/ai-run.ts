// AI runs (server/ai/runs.ts). `ai.run` works on one (connection, contact) at its debounce row's
// due time; the debounce row and the run row are the truth, the job only says "look now", so a
// job run twice, early or after a crash finds what is left to do and does only that. `ai.sweep`
// (every minute, and once at start) creates jobs for debounce rows whose job was lost with a
// process and for runs whose holder died.
import type { AppContext } from "../server/context.js";
import { AI_RUN_LEASE_MS } from "../server/ai/runs.js";
import { AI_RUN_JOB, AI_SWEEP_JOB, AiRunPayload } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function aiRunJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: AI_RUN_JOB,
    concurrency: 10,
    // As long as a run's lease: a process that died holding the job gives it back when its runs may be resumed.
    lockLifetimeMs: AI_RUN_LEASE_MS,
    removeOnComplete: true,
    async run(data) {
      const { connection_id, contact } = AiRunPayload.parse(data);
      await ctx.services.aiRuns.runDue(connection_id, contact);
    },
  };
}

export function aiSweepJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: AI_SWEEP_JOB,
    concurrency: 1,
    // The one-off sweep of each start goes once done; the recurring one keeps its row (Agenda
    // removes only jobs without a next run).
    removeOnComplete: true,
    async run() {
      const now = Date.now();
      for (const due of await ctx.services.aiRuns.sweep()) {
        await ctx.jobs.agenda.schedule(new Date(Math.max(now, due.at.getTime())), AI_RUN_JOB, { connection_id: due.connectionId, contact: due.contact } satisfies AiRunPayload);
      }
    },
  };
}
