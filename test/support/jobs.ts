// Jobs as the job outbox (server/db/job-outbox.ts) and Agenda hold them: a row of the outbox and
// the Agenda job it was relayed to are one job (the relay keys the job by the row's id).
import type { DataSource } from "typeorm";

/** How many jobs named `name` whose payload's `field` is `value` are queued or relayed, each counted once. */
export async function queuedJobs(db: DataSource, name: string, field: string, value: string): Promise<number> {
  const [row] = (await db.query(
    `SELECT count(DISTINCT k)::int AS n FROM (
       SELECT 'outbox:' || id AS k FROM job_outbox WHERE name = $1 AND data->>$2 = $3
       UNION ALL
       SELECT data->>'outbox_id' FROM agenda_jobs WHERE name = $1 AND data->>$2 = $3
     ) jobs`,
    [name, field, value],
  )) as { n: number }[];
  return row!.n;
}
