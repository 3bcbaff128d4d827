import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Connections, pairing grants, messages with their timeline, the dispatch outbox, idempotency
 * records, provider-callback dedupe and the event outbox that webhooks fan out from.
 */
export class Messaging1732240100000 implements MigrationInterface {
  name = "Messaging1732240100000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE connections (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        slug text NOT NULL,
        name text,
        state text NOT NULL CHECK (state IN ('created','pairing','connected','disconnected','suspended','deleted')),
        -- the state to return to on resume: whether the device is still linked
        linked boolean NOT NULL DEFAULT false,
        phone text,
        transport text NOT NULL,
        -- the token is HMAC(server key, id + nonce): derivable by the gateway for its engines,
        -- never stored; the digest authenticates callbacks
        callback_nonce text NOT NULL,
        callback_token_digest bytea NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE UNIQUE INDEX connections_live_slug ON connections(workspace_id, slug) WHERE deleted_at IS NULL;
      CREATE INDEX connections_phone ON connections(transport, phone) WHERE deleted_at IS NULL;

      CREATE TABLE pairing_grants (
        id text PRIMARY KEY,
        connection_id text NOT NULL REFERENCES connections(id),
        payload_sealed text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX pairing_grants_connection ON pairing_grants(connection_id);

      -- No foreign keys from the hot tables (messages, events) to workspaces and connections:
      -- every insert would share-lock the same parent row, and concurrent sends of one
      -- workspace then serialise on multixact bookkeeping. The application writes these ids
      -- from rows it has just read, and connections are only ever soft-deleted, then purged
      -- together with their messages.
      CREATE TABLE messages (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        connection_id text NOT NULL,
        direction text NOT NULL CHECK (direction IN ('inbound','outbound')),
        status text NOT NULL,
        recipient jsonb NOT NULL,
        sender text,
        body text,
        media jsonb,
        location jsonb,
        context jsonb,
        metadata jsonb,
        context_sensitivity text,
        send_at timestamptz,
        timezone text,
        provider_message_id text,
        error_code text,
        error_message text,
        schedule_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX messages_workspace_created ON messages(workspace_id, created_at DESC, id DESC);
      CREATE INDEX messages_connection_created ON messages(connection_id, created_at DESC, id DESC);
      CREATE INDEX messages_provider_id ON messages(connection_id, provider_message_id) WHERE provider_message_id IS NOT NULL;

      CREATE TABLE message_timeline (
        id bigserial PRIMARY KEY,
        message_id text NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        status text NOT NULL,
        at timestamptz NOT NULL DEFAULT clock_timestamp(),
        detail text
      );
      CREATE INDEX message_timeline_message ON message_timeline(message_id, id);

      -- The hand-off outbox: a row per accepted message not yet taken by the engine. Written in
      -- the same transaction as the message; claimed with FOR UPDATE SKIP LOCKED.
      CREATE TABLE dispatch_queue (
        message_id text PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        connection_id text NOT NULL,
        available_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        locked_until timestamptz,
        last_error text
      );
      CREATE INDEX dispatch_queue_available ON dispatch_queue(available_at);

      CREATE TABLE idempotency_keys (
        workspace_id text NOT NULL,
        key text NOT NULL,
        fingerprint bytea NOT NULL,
        locked_until timestamptz,
        response_status integer,
        response_body jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, key)
      );
      CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);

      CREATE TABLE provider_callbacks (
        connection_id text NOT NULL,
        event_id text NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (connection_id, event_id)
      );

      -- The event outbox: one row per domain event, written in the transaction of the change.
      CREATE TABLE events (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        type text NOT NULL,
        connection_id text,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        fanned_out_at timestamptz
      );
      CREATE INDEX events_pending ON events(created_at) WHERE fanned_out_at IS NULL;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE events, provider_callbacks, idempotency_keys, dispatch_queue, message_timeline, messages, pairing_grants, connections`);
  }
}
