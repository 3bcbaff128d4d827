import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * AI runs (docs/ai.md): one row per run, unique on the inbound message
 * it answers so that a retried job never answers twice, carrying its state while in flight (the
 * worst-case cost is reserved in cost_micros until the real cost replaces it); and the debounce
 * rows, one per (connection, contact) waiting to be answered, so that a restart loses none.
 * Never a prompt, a completion or a message body.
 */
export class AiRuns1732250800000 implements MigrationInterface {
  name = "AiRuns1732250800000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_runs (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        connection_id text NOT NULL,
        -- the inbound message the run answers: one run per message, whatever retries
        message_id text NOT NULL UNIQUE,
        contact text NOT NULL,
        mode text NOT NULL,
        model text NOT NULL,
        prompt_sha256 text,
        input_tokens integer NOT NULL DEFAULT 0,
        output_tokens integer NOT NULL DEFAULT 0,
        -- while calling: the run's worst case, reserved against the monthly ceiling
        cost_micros bigint NOT NULL DEFAULT 0,
        latency_ms integer,
        -- pending (claimed, nothing sent yet), calling (the vendor may be billing), done
        state text NOT NULL CHECK (state IN ('pending','calling','done')),
        outcome text,
        error text,
        -- whoever holds the run works on it until then; past it, another process may resume it
        lease_until timestamptz,
        reply_message_id text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        finished_at timestamptz
      );
      CREATE INDEX ai_runs_workspace_created ON ai_runs(workspace_id, created_at DESC, id DESC);
      CREATE INDEX ai_runs_connection_created ON ai_runs(connection_id, created_at DESC, id DESC);
      CREATE INDEX ai_runs_in_flight ON ai_runs(lease_until) WHERE state <> 'done';

      CREATE TABLE ai_debounce (
        connection_id text NOT NULL,
        contact text NOT NULL,
        workspace_id text NOT NULL,
        -- the newest inbound message of the burst: the run answers it
        message_id text NOT NULL,
        first_at timestamptz NOT NULL,
        due_at timestamptz NOT NULL,
        PRIMARY KEY (connection_id, contact)
      );
      CREATE INDEX ai_debounce_due ON ai_debounce(due_at);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_debounce, ai_runs`);
  }
}
