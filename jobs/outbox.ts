// The relay of the job outbox (server/db/job-outbox.ts): rows written with the work that needs
// them become Agenda jobs. A turn takes a batch under a short lease (so relays of several
// processes share the rows and a relay that died gives its rows back), saves each as a job whose
// unique key is the row's id (a row relayed twice, after a crash between the save and the delete,
// is one job), then deletes the batch. It is woken by NOTIFY svc_jobs, which every insert into the
// outbox sends on commit, looks again when a lease taken by a relay that did not finish ends, and
// polls besides: every 10 s with LISTEN up, every 500 ms while it is down (server/polling-loop.ts).
import type { DataSource } from "typeorm";
import type { DatabaseListener } from "../server/db/listener.js";
import { rows } from "../server/db/rows.js";
import type { Logger } from "../server/logger.js";
import { PollingLoop } from "../server/polling-loop.js";
import type { JobRunner } from "./runner.js";

export const JOBS_CHANNEL = "svc_jobs";
const BATCH = 200;
/**
 * How long a relay holds the rows it took: far longer than saving them takes. A relay that died
 * holding rows delays their jobs by this (the relays look again when a lease ends); one that
 * outlives it only saves again jobs that exist (the unique key), so it is kept short.
 */
export const RELAY_LEASE_MS = 10_000;

interface OutboxRow {
  id: string;
  name: string;
  data: Record<string, unknown>;
  run_at: Date;
}

export class JobRelay {
  private readonly loop: PollingLoop;

  constructor(
    private readonly db: DataSource,
    private readonly jobs: JobRunner,
    logger: Logger,
    options: { idleMs?: number; listener?: DatabaseListener } = {},
  ) {
    this.loop = new PollingLoop({
      tick: () => this.relay(),
      full: (n) => n >= BATCH,
      idleMs: options.idleMs ?? 500,
      ...(options.listener ? { notifiedBy: { listener: options.listener, channel: JOBS_CHANNEL }, dueIn: () => this.leaseEndsIn() } : {}),
      logger,
      errorMessage: "job outbox relay failed",
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** New rows were committed (NOTIFY, or this process wrote them): relay now. */
  wake(): void {
    this.loop.wake();
  }

  /** Milliseconds until the first lease of a relay that has not finished ends (a dead relay's rows are free then; no NOTIFY says so). */
  private async leaseEndsIn(): Promise<number | null> {
    const [row] = await rows<{ ms: number | null }>(this.db, `SELECT (extract(epoch FROM min(locked_until) - now()) * 1000)::float8 AS ms FROM job_outbox WHERE locked_until IS NOT NULL`);
    return row?.ms ?? null;
  }

  /** One batch: taken, saved as jobs, deleted. Answers how many rows it relayed. */
  async relay(limit = BATCH): Promise<number> {
    const taken = await rows<OutboxRow>(
      this.db,
      `UPDATE job_outbox SET locked_until = now() + $2 * interval '1 millisecond'
        WHERE id IN (SELECT id FROM job_outbox WHERE locked_until IS NULL OR locked_until < now() ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING id::text, name, data, run_at`,
      [limit, RELAY_LEASE_MS],
    );
    for (const row of taken) {
      const outboxId = `outbox:${row.id}`;
      await this.jobs.agenda
        .create(row.name, { ...row.data, outbox_id: outboxId })
        .schedule(row.run_at)
        .unique({ "data.outbox_id": outboxId }, { insertOnly: true })
        .save();
    }
    if (taken.length) await this.db.query(`DELETE FROM job_outbox WHERE id = ANY($1::bigint[])`, [taken.map((r) => r.id)]);
    return taken.length;
  }
}
