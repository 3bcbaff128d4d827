import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * A message's timeline in time order: an entry is never stamped earlier than the entries before
 * it. Statements stamp their entries with the database's clock, engine reports with the engine's
 * (the network's time, which may be coarser, or run behind ours); and the hand-off records
 * `submitted` only once the engine has answered, by which time the engine may already have
 * stamped `sent`. Every writer of an entry holds its message's row lock, so entries of one
 * message are written one at a time; the function is VOLATILE, so under READ COMMITTED its query
 * sees an entry committed while the inserting statement waited for that lock.
 */
export class TimelineOrder1732250919000 implements MigrationInterface {
  name = "TimelineOrder1732250919000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION message_timeline_in_order() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        NEW.at := GREATEST(NEW.at, (SELECT max(at) FROM message_timeline WHERE message_id = NEW.message_id));
        RETURN NEW;
      END $$;
      CREATE TRIGGER message_timeline_in_order BEFORE INSERT ON message_timeline
        FOR EACH ROW EXECUTE FUNCTION message_timeline_in_order();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER message_timeline_in_order ON message_timeline;
      DROP FUNCTION message_timeline_in_order();
    `);
  }
}
