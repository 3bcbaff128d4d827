import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Why a connection is not connected, as its engine said (`replaced_elsewhere`,
 * `client_version_refused`, `passkey_required`, …): shown as the connection's `detail`, cleared
 * by the next state change that does not carry one.
 */
export class ConnectionDetail1732250920000 implements MigrationInterface {
  name = "ConnectionDetail1732250920000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE connections ADD COLUMN state_detail text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE connections DROP COLUMN state_detail`);
  }
}
