// Follow-up work is written to the job outbox (migration 1732261400000-job-outbox) by the
// statement, or in the transaction, that makes it necessary; jobs/outbox.ts relays it to Agenda.
// Nothing creates a job after a commit, so a crash can lose none.
import type { EntityManager } from "typeorm";
import type { JobName } from "../../jobs/names.js";

/** Queues `name` with `data` to run at `runAt`, inside the caller's transaction. */
export async function enqueueJob(em: Pick<EntityManager, "query">, name: JobName, data: Record<string, string>, runAt: Date): Promise<void> {
  await em.query(`INSERT INTO job_outbox (name, data, run_at) VALUES ($1, $2::jsonb, $3)`, [name, JSON.stringify(data), runAt]);
}
