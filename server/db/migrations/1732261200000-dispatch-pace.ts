import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Pacing shared by every gateway process (docs/engines.md, "Pacing": a connection's rate is never exceeded summed
 * over processes): the time, on the database's clock, from which a connection's next hand-off may
 * go. A dispatcher reserves its batch's slot by moving it forward in one statement, then waits for
 * its start; every process reserves from the same row, so their hand-offs of one connection line up.
 */
export class DispatchPace1732261200000 implements MigrationInterface {
  name = "DispatchPace1732261200000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE dispatch_pace (connection_id text PRIMARY KEY, next_at timestamptz NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE dispatch_pace`);
  }
}
