import type { MigrationInterface, QueryRunner } from "typeorm";
import { TimelineOrder1732250919000 } from "./1732250919000-timeline-order.js";

/**
 * Per-row work taken off the message path (docs/performance.md, "Per-row triggers and checks"):
 * each of these ran a query of its own for every row written, and together they cost about a
 * quarter of the database's time a delivered message.
 *
 * - A timeline entry is no longer stamped in order when written (a PL/pgSQL trigger, ~22 µs an
 *   entry); it is read in order: the view `message_timeline_in_order` shows each entry at the
 *   latest `at` of the entries up to it, by id, the order they were written in (one at a time,
 *   under the message's row lock): the value the trigger stored. Entries already written are in
 *   order.
 * - Events no endpoint matches are still written fanned out, by the statement that writes them
 *   (`insertEvents`, server/events/record.ts) with the same `webhook_endpoint_matches`, not by a
 *   PL/pgSQL trigger (~28 µs an event).
 * - `message_timeline` and `dispatch_queue` no longer check their message by foreign key (~13 µs
 *   a row): both are written only by statements that write or lock that message. Deleting
 *   messages still deletes them: one statement-level trigger, for all the rows a delete removes.
 */
export class MessagePathPerRow1732262300000 implements MigrationInterface {
  name = "MessagePathPerRow1732262300000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER message_timeline_in_order ON message_timeline;
      DROP FUNCTION message_timeline_in_order();
      CREATE VIEW message_timeline_in_order AS
        SELECT id, message_id, status, max(at) OVER (PARTITION BY message_id ORDER BY id) AS at, detail FROM message_timeline;

      DROP TRIGGER events_mark_unmatched ON events;
      DROP FUNCTION events_mark_unmatched();

      ALTER TABLE message_timeline DROP CONSTRAINT message_timeline_message_id_fkey;
      ALTER TABLE dispatch_queue DROP CONSTRAINT dispatch_queue_message_id_fkey;
      CREATE FUNCTION messages_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM message_timeline t USING gone g WHERE t.message_id = g.id;
          DELETE FROM dispatch_queue d USING gone g WHERE d.message_id = g.id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER messages_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS gone
        FOR EACH STATEMENT EXECUTE FUNCTION messages_deleted();
    `);
  }

  /** The old triggers again: the timeline's as its own migration wrote it; the events' without the function that migration also made, which stays. */
  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER messages_deleted ON messages;
      DROP FUNCTION messages_deleted();
      ALTER TABLE dispatch_queue ADD CONSTRAINT dispatch_queue_message_id_fkey FOREIGN KEY (message_id) REFERENCES messages(id) ON DELETE CASCADE;
      ALTER TABLE message_timeline ADD CONSTRAINT message_timeline_message_id_fkey FOREIGN KEY (message_id) REFERENCES messages(id) ON DELETE CASCADE;

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

      DROP VIEW message_timeline_in_order;
    `);
    await new TimelineOrder1732250919000().up(q);
  }
}
