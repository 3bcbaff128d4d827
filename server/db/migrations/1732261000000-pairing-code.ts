import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Pairing by phone-number code (docs/engines.md): a grant
 * remembers whether it shows a QR code or a code to type on the phone. Grants opened before this
 * migration were QR grants.
 */
export class PairingCode1732261000000 implements MigrationInterface {
  name = "PairingCode1732261000000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE pairing_grants ADD COLUMN method text NOT NULL DEFAULT 'qr' CHECK (method IN ('qr','code'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE pairing_grants DROP COLUMN method`);
  }
}
