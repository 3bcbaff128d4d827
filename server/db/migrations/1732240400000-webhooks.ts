import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Webhook endpoints, one delivery per (endpoint, event) fanned out from the `events` outbox, and
 * every attempt made for a delivery. Deliveries are claimed with FOR UPDATE SKIP LOCKED and a lock
 * that expires, like the hand-off queue (server/webhooks/delivery.ts).
 */
export class Webhooks1732240400000 implements MigrationInterface {
  name = "Webhooks1732240400000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_endpoints (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        url text NOT NULL,
        description text,
        events text[] NOT NULL,
        -- the pinned connection (its id: a slug may be reused after the connection is deleted)
        connection_id text REFERENCES connections(id),
        -- AES-256-GCM under SECRET_KEY (server/secrets.ts): the secret must be usable for signing
        secret_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints(workspace_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

      CREATE TABLE webhook_deliveries (
        id text PRIMARY KEY,
        endpoint_id text NOT NULL REFERENCES webhook_endpoints(id),
        workspace_id text NOT NULL,
        event_id text NOT NULL REFERENCES events(id) ON DELETE CASCADE,
        event_type text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending','succeeded','failed','canceled')),
        -- attempts made so far, and the failed ones since the last (re)start, which index the
        -- retry schedule; a manual resend starts the schedule again
        attempt_count integer NOT NULL DEFAULT 0,
        retry_step integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz,
        -- a claim: until when, and by which claim (so the claimer alone records its outcome)
        locked_until timestamptz,
        claim_token text,
        last_status_code integer,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz,
        -- fan-out is idempotent: an event reaches an endpoint once whatever happens to the fan-out
        UNIQUE (endpoint_id, event_id)
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at DESC, id DESC);
      CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);

      CREATE TABLE webhook_attempts (
        id bigserial PRIMARY KEY,
        delivery_id text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempted_at timestamptz NOT NULL,
        -- what started it: the first attempt, a scheduled retry, or a resend through the API
        trigger text NOT NULL CHECK (trigger IN ('initial','retry','manual')),
        status_code integer,
        latency_ms integer NOT NULL,
        -- null on success; else a WebhookDeliveryError reason or 'http_status'
        error_code text,
        error text
      );
      CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_attempts; DROP TABLE webhook_deliveries; DROP TABLE webhook_endpoints;`);
  }
}
