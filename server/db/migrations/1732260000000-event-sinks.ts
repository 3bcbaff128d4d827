import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Publishing the event outbox to brokers, and reading it back from a cursor (docs/events.md).
 *
 * `events.tx` is the id of the transaction that recorded the event (`pg_current_xact_id()`, by
 * default, so no statement that records an event changes). Read in (tx, id) order and only below
 * the oldest transaction still running (`pg_snapshot_xmin`), the outbox is an append-only log: no
 * event can later commit behind a position already read, which an order by id or by created_at
 * cannot promise (an id is taken before its transaction commits). Events recorded before this
 * migration keep tx 0 and come first, in id order.
 *
 * `event_sinks`: one row per broker sink, its position in that order and the lease of the process
 * that publishes for it.
 */
export class EventSinks1732260000000 implements MigrationInterface {
  name = "EventSinks1732260000000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE events ADD COLUMN tx bigint NOT NULL DEFAULT 0;
      ALTER TABLE events ALTER COLUMN tx SET DEFAULT (pg_current_xact_id()::text::bigint);
      CREATE INDEX events_log ON events(tx, id);
      CREATE INDEX events_workspace_log ON events(workspace_id, tx, id);
      CREATE INDEX events_created ON events(created_at);

      CREATE TABLE event_sinks (
        name text PRIMARY KEY,
        -- the last event published: (tx, event_id) in the log's order
        tx bigint NOT NULL,
        event_id text NOT NULL,
        published bigint NOT NULL DEFAULT 0,
        -- the process publishing for this sink until lease_until; past it, another may take over
        lease_owner text,
        lease_until timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE event_sinks;
      DROP INDEX events_log, events_workspace_log, events_created;
      ALTER TABLE events DROP COLUMN tx;
    `);
  }
}
