// The recurring jobs, registered once the runner has started (Agenda keeps one row per name). Every
// job is defined by the folder that owns it, handed the service it works with, and the
// composition root (server/compose.ts) lists them all.
import { PRUNE_JOB, RETIRED_JOBS } from "./names.js";
import type { JobRunner } from "./runner.js";

export async function scheduleRecurringJobs(jobs: JobRunner): Promise<void> {
  await jobs.agenda.cancel({ names: RETIRED_JOBS });
  await jobs.agenda.every("1 hour", PRUNE_JOB, {}, { skipImmediate: false });
}
