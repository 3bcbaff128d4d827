import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * An account restriction the network reported (docs/engines.md, "Account restriction"): while it
 * holds, the dispatcher claims none of the connection's messages, so they stay queued. Until when,
 * where the network said (NULL: until it reports the restriction lifted, or an operator resumes).
 * And a pairing asked of the process that holds a Baileys connection's socket by another process
 * (`pair_request`: {id, phone}), with the holder's answer (`pair_answer`: the request id, or
 * `failed:<id>`; the payload itself is the row's sealed QR).
 */
export class ConnectionRestriction1732261600000 implements MigrationInterface {
  name = "ConnectionRestriction1732261600000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE connections ADD COLUMN restricted boolean NOT NULL DEFAULT false;
      ALTER TABLE connections ADD COLUMN restricted_until timestamptz;
      ALTER TABLE baileys_leases ADD COLUMN pair_request jsonb;
      ALTER TABLE baileys_leases ADD COLUMN pair_answer text;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE connections DROP COLUMN restricted, DROP COLUMN restricted_until`);
    await q.query(`ALTER TABLE baileys_leases DROP COLUMN pair_request, DROP COLUMN pair_answer`);
  }
}
