// AI runs (server/ai/runs.ts). `ai.run` works on one (connection, contact) at its debounce row's
// due time; the debounce row and the run row are the truth, the job only says "look now", so a
// job run twice, early or after a crash finds what is left to do and does only that. The job is
// written to the job outbox with the inbound message that made it due; a process that dies while
// working on it leaves it locked for AI_RUN_LEASE_MS, after which Agenda runs it again and the run
// is resumed.
import type { AppContext } from "../server/context.js";
import { AI_RUN_LEASE_MS } from "../server/ai/runs.js";
import { AI_RUN_JOB, AiRunPayload } from "./names.js";
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
