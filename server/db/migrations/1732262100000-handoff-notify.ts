import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The dispatch queue and the sandbox's report queue NOTIFY on commit whenever a statement adds a
 * row or moves when one falls due (a retry's backoff), so that the dispatcher and the sandbox's
 * outbox of every process sleep until their next row is due instead of polling for it
 * (server/polling-loop.ts, `dueIn`). Claims change neither column: they notify no one.
 */
export class HandoffNotify1732262100000 implements MigrationInterface {
  name = "HandoffNotify1732262100000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TRIGGER dispatch_queue_notify AFTER INSERT OR UPDATE OF available_at ON dispatch_queue
        FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('svc_dispatch');
      CREATE TRIGGER sandbox_callbacks_notify AFTER INSERT OR UPDATE OF due_at ON sandbox_callbacks
        FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('svc_sandbox_reports');
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER sandbox_callbacks_notify ON sandbox_callbacks;
      DROP TRIGGER dispatch_queue_notify ON dispatch_queue;
    `);
  }
}
