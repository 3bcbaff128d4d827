import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The Baileys engine's own tables. Auth state (credentials and signal keys) and the message store
 * hold secrets and message content: their values are sealed under SECRET_KEY (server/secrets.ts).
 * Rows are keyed by connection and removed with it (logout, delete), never shared across numbers.
 */
export class Baileys1732250500000 implements MigrationInterface {
  name = "Baileys1732250500000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE baileys_auth (
        connection_id text NOT NULL,
        kind text NOT NULL,
        key_id text NOT NULL,
        value_sealed text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (connection_id, kind, key_id)
      );
      CREATE TABLE baileys_messages (
        connection_id text NOT NULL,
        network_id text NOT NULL,
        message_id text,
        message_sealed text,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (connection_id, network_id)
      );
      CREATE INDEX baileys_messages_age ON baileys_messages (created_at);
      CREATE TABLE baileys_lid_map (
        connection_id text NOT NULL,
        lid text NOT NULL,
        phone text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (connection_id, lid)
      );
      -- Sends handed off on a process that does not hold the connection's socket, for its holder.
      CREATE TABLE baileys_outbox (
        message_id text PRIMARY KEY,
        connection_id text NOT NULL,
        message jsonb NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX baileys_outbox_connection ON baileys_outbox (connection_id, created_at);
      CREATE TABLE baileys_leases (
        connection_id text PRIMARY KEY,
        holder text NOT NULL,
        expires_at timestamptz NOT NULL,
        -- The socket's current pairing QR while it pairs (it rotates), so any process can redeem it.
        qr_sealed text
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE baileys_leases; DROP TABLE baileys_outbox; DROP TABLE baileys_lid_map; DROP TABLE baileys_messages; DROP TABLE baileys_auth;`);
  }
}
