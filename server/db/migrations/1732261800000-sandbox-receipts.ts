import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The receipts a sandbox delivery is to be reported with (`{sent,delivered,read}`, `{failed}` for a
 * number off the network…), written with the delivery: a gateway running the sandbox in process
 * applies them from memory, and a process that died before applying them all leaves this for the
 * sweep of another (server/engines/sandbox/receipts.ts). NULL: its receipts were queued in
 * `sandbox_callbacks` (every delivery made before this migration, or under duplicate_callbacks).
 */
export class SandboxReceipts1732261800000 implements MigrationInterface {
  name = "SandboxReceipts1732261800000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE sandbox_deliveries ADD COLUMN reports text[];
      CREATE INDEX sandbox_deliveries_created ON sandbox_deliveries(created_at) WHERE reports IS NOT NULL;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sandbox_deliveries_created; ALTER TABLE sandbox_deliveries DROP COLUMN reports`);
  }
}
