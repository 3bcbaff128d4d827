// AI runs (server/ai/runs/). `ai.run` works on one (connection, contact) at its debounce row's
// due time; the debounce row and the run row are the truth, the job only says "look now", so a
// job run twice, early or after a crash finds what is left to do and does only that. The job is
// written to the job outbox with the inbound message that made it due, and each claim of a run
// writes the job that resumes it once its lease has passed, should its process die. The job's
// lock is short and renewed while it runs, so a dead process gives the job back within seconds.
import type { AiRunner } from "../server/ai/runs/runner.js";
import { AI_RUN_JOB, AiRunPayload } from "./names.js";
import type { JobDefinition } from "./runner.js";

/** The `ai.run` job's lock, renewed while it runs (a run itself is leased for AI_RUN_LEASE_MS). */
const AI_RUN_JOB_LOCK_MS = 15_000;

export function aiRunJob(runs: AiRunner): JobDefinition<unknown> {
  return {
    name: AI_RUN_JOB,
    concurrency: 10,
    lockLifetimeMs: AI_RUN_JOB_LOCK_MS,
    heartbeat: true,
    removeOnComplete: true,
    async run(data) {
      const { connection_id, contact } = AiRunPayload.parse(data);
      await runs.runDue(connection_id, contact);
    },
  };
}
