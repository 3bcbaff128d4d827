import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The Baileys engine's number checks, remembered a day per connection (docs/engines.md: number checks
 * cached and throttled): the network counts lookups against a number, and any process can answer
 * from here, not only the socket's holder.
 */
export class NumberChecks1732261300000 implements MigrationInterface {
  name = "NumberChecks1732261300000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE baileys_number_checks (
        connection_id text NOT NULL,
        phone text NOT NULL,
        on_network boolean NOT NULL,
        checked_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (connection_id, phone)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE baileys_number_checks`);
  }
}
