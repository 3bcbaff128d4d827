import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The job outbox: follow-up work (a deferred send's release, an AI run, a webhook retry) is a row
 * written by the same statement as the rows that need it, so it exists exactly when they
 * committed. The relay (jobs/outbox.ts) hands each row to Agenda, with the row's id as the job's
 * unique key, and deletes it. Inserts into it and into events NOTIFY, so that the relay and the
 * webhook fan-out of every process start at once rather than at their next poll.
 */
export class JobOutbox1732261400000 implements MigrationInterface {
  name = "JobOutbox1732261400000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE job_outbox (
        id bigserial PRIMARY KEY,
        name text NOT NULL,
        data jsonb NOT NULL,
        run_at timestamptz NOT NULL,
        -- a relay that took the row holds it until then; past it, another relay may take it
        locked_until timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE FUNCTION notify_channel() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify(TG_ARGV[0], '');
        RETURN NULL;
      END $$;
      CREATE TRIGGER job_outbox_notify AFTER INSERT ON job_outbox FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('svc_jobs');
      CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION notify_channel('svc_events');
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER events_notify ON events;
      DROP TRIGGER job_outbox_notify ON job_outbox;
      DROP FUNCTION notify_channel();
      DROP TABLE job_outbox;
    `);
  }
}
