import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The sandbox engine's simulated network (server/engines/sandbox/): its sessions, the contacts
 * declared on it, what it delivered, the reports it still owes the gateway, and the injected
 * faults. Its own tables, joined to nothing of the gateway's: the sandbox sees the gateway only
 * through the engine interface and the callback URL, like a real engine. The tables exist in
 * production too (migrations do not depend on configuration) but stay empty there.
 */
export class Sandbox1732240200000 implements MigrationInterface {
  name = "Sandbox1732240200000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sandbox_sessions (
        connection_id text PRIMARY KEY,
        state text NOT NULL CHECK (state IN ('pairing','linked','unlinked')),
        -- SHA-256 of the current pairing payload; a scan presents the payload itself
        pairing_digest bytea UNIQUE,
        phone text,
        -- false between stop (suspend) and start (resume): the session's reports wait
        running boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX sandbox_sessions_linked_phone ON sandbox_sessions(phone) WHERE state = 'linked';

      CREATE TABLE sandbox_contacts (
        phone text PRIMARY KEY,
        on_network boolean NOT NULL,
        receipts text NOT NULL CHECK (receipts IN ('read','delivered','none')),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      -- Every send the network accepted, once per message id (a retried hand-off finds its row)
      CREATE TABLE sandbox_deliveries (
        id bigserial PRIMARY KEY,
        message_id text NOT NULL UNIQUE,
        provider_message_id text NOT NULL,
        connection_id text NOT NULL,
        from_phone text,
        to_address text NOT NULL,
        recipient jsonb NOT NULL,
        body text,
        media jsonb,
        location jsonb,
        outcome text NOT NULL CHECK (outcome IN ('delivered','not_on_network')),
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX sandbox_deliveries_to ON sandbox_deliveries(to_address, id);

      -- Reports owed to the gateway, posted in due order and retried until acknowledged
      CREATE TABLE sandbox_callbacks (
        id bigserial PRIMARY KEY,
        connection_id text NOT NULL,
        kind text NOT NULL,
        event jsonb NOT NULL,
        due_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        locked_until timestamptz,
        last_error text
      );
      CREATE INDEX sandbox_callbacks_due ON sandbox_callbacks(due_at, id);
      CREATE INDEX sandbox_callbacks_connection ON sandbox_callbacks(connection_id);

      -- One row: the network-wide fault injection, shared by every process of the gateway
      CREATE TABLE sandbox_faults (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        fail_next_sends integer NOT NULL DEFAULT 0 CHECK (fail_next_sends >= 0),
        latency_ms integer NOT NULL DEFAULT 0 CHECK (latency_ms BETWEEN 0 AND 60000),
        duplicate_callbacks boolean NOT NULL DEFAULT false
      );
      INSERT INTO sandbox_faults DEFAULT VALUES;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sandbox_faults, sandbox_callbacks, sandbox_deliveries, sandbox_contacts, sandbox_sessions`);
  }
}
