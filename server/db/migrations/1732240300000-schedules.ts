import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Recurring schedules (docs/schedules.md) and their runs. The schedules table is also the firing
 * queue: due rows are claimed with FOR UPDATE SKIP LOCKED through the partial index on
 * next_run_at. A run row per fired occurrence, keyed by (schedule_id, occurrence_at), is the
 * idempotency key of a fire: an occurrence can be recorded, hence sent, only once.
 */
export class Schedules1732240300000 implements MigrationInterface {
  name = "Schedules1732240300000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE schedules (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        name text NOT NULL,
        status text NOT NULL CHECK (status IN ('active','paused','completed','canceled')),
        timezone text NOT NULL,
        recurrence jsonb NOT NULL,
        -- the send body (validated at creation); its connection is resolved by slug at each fire
        message jsonb NOT NULL,
        starts_at timestamptz,
        ends_at timestamptz,
        max_occurrences integer CHECK (max_occurrences BETWEEN 1 AND 10000),
        occurrences integer NOT NULL DEFAULT 0,
        next_run_at timestamptz,
        last_run_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT schedules_next_run CHECK ((status IN ('completed','canceled')) = (next_run_at IS NULL))
      );
      CREATE INDEX schedules_workspace ON schedules(workspace_id, id DESC);
      CREATE INDEX schedules_due ON schedules(next_run_at) WHERE status = 'active';
      -- a batch fires the due schedules of one workspace
      CREATE INDEX schedules_workspace_due ON schedules(workspace_id, next_run_at) WHERE status = 'active';

      CREATE TABLE schedule_runs (
        schedule_id text NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
        occurrence_at timestamptz NOT NULL,
        -- the message the fire created (no foreign key: a connection's purge removes messages);
        -- null when no message could be written (no live connection with the slug)
        message_id text,
        error_code text,
        fired_at timestamptz NOT NULL DEFAULT now(),
        -- host:pid of the process that fired it, for operators
        fired_by text NOT NULL,
        PRIMARY KEY (schedule_id, occurrence_at)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE schedule_runs, schedules`);
  }
}
