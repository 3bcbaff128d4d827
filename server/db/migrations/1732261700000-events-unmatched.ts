import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Which webhook endpoints an event goes to, as one SQL function that the fan-out's join and the
 * trigger below both use; and events that no endpoint matches when they are written are written
 * fanned out already (docs/decisions.md, "Events no endpoint matches are written fanned out"):
 * most events of a workspace without webhooks then cost the outbox one row write, not two.
 */
export class EventsUnmatched1732261700000 implements MigrationInterface {
  name = "EventsUnmatched1732261700000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION webhook_endpoint_matches(e webhook_endpoints, workspace_id text, type text, connection_id text) RETURNS boolean
        LANGUAGE sql IMMUTABLE
        AS $$ SELECT e.workspace_id = workspace_id AND e.deleted_at IS NULL AND type = ANY(e.events)
                     AND (e.connection_id IS NULL OR e.connection_id = connection_id) $$;
      CREATE FUNCTION events_mark_unmatched() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.fanned_out_at IS NULL AND NOT EXISTS (
               SELECT 1 FROM webhook_endpoints e
                WHERE e.workspace_id = NEW.workspace_id AND e.deleted_at IS NULL
                  AND webhook_endpoint_matches(e, NEW.workspace_id, NEW.type, NEW.connection_id)) THEN
            NEW.fanned_out_at := now();
          END IF;
          RETURN NEW;
        END $$;
      CREATE TRIGGER events_mark_unmatched BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_mark_unmatched();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER events_mark_unmatched ON events;
      DROP FUNCTION events_mark_unmatched();
      DROP FUNCTION webhook_endpoint_matches(webhook_endpoints, text, text, text);
    `);
  }
}
