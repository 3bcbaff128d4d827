import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Every statement that creates a schedule or moves its next run or status NOTIFYs on commit, so
 * that the firing loop of every process (server/schedules/firing.ts) learns of a schedule due
 * sooner than the one it waits for, instead of polling for it.
 */
export class SchedulesNotify1732261900000 implements MigrationInterface {
  name = "SchedulesNotify1732261900000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TRIGGER schedules_notify AFTER INSERT OR UPDATE OF next_run_at, status ON schedules FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('svc_schedules')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER schedules_notify ON schedules`);
  }
}
