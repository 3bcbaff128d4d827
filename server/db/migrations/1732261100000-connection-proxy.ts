import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * A proxy per connection (docs/engines.md): the URL its
 * engine's socket goes through. It may carry the proxy's password, so it is stored sealed under
 * SECRET_KEY like every other secret.
 */
export class ConnectionProxy1732261100000 implements MigrationInterface {
  name = "ConnectionProxy1732261100000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE connections ADD COLUMN proxy_url_sealed text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE connections DROP COLUMN proxy_url_sealed`);
  }
}
