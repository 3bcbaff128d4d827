import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The gateway processes that run the Baileys engine, each renewing its row with its lease poll:
 * counted (live rows) to share the connections' sockets out fairly between them
 * (server/engines/baileys/lease.ts).
 */
export class BaileysProcesses1732262000000 implements MigrationInterface {
  name = "BaileysProcesses1732262000000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE baileys_processes (holder text PRIMARY KEY, expires_at timestamptz NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE baileys_processes`);
  }
}
