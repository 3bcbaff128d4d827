import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Tells every gateway process when what an API key resolves to may have changed: a key revoked or
 * re-scoped, a member's role changed or removed, a workspace moved to another plan, a plan edited.
 * Each process caches resolved keys and empties its cache on `svc_auth_changed`
 * (server/auth/key-cache.ts). Statement-level triggers, so that a bulk change notifies once; the
 * notification is delivered when the change commits and not at all when it rolls back.
 */
export class AuthChanges1732240500000 implements MigrationInterface {
  name = "AuthChanges1732240500000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('svc_auth_changed', TG_TABLE_NAME);
        RETURN NULL;
      END $$;
      CREATE TRIGGER api_keys_auth_changed AFTER UPDATE OF revoked_at, scopes, digest, workspace_id, created_by OR DELETE OR TRUNCATE ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();
      CREATE TRIGGER members_auth_changed AFTER UPDATE OR DELETE OR TRUNCATE ON members
        FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();
      CREATE TRIGGER workspaces_auth_changed AFTER UPDATE OF plan_id OR DELETE OR TRUNCATE ON workspaces
        FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();
      CREATE TRIGGER plans_auth_changed AFTER UPDATE OR DELETE OR TRUNCATE ON plans
        FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER api_keys_auth_changed ON api_keys;
      DROP TRIGGER members_auth_changed ON members;
      DROP TRIGGER workspaces_auth_changed ON workspaces;
      DROP TRIGGER plans_auth_changed ON plans;
      DROP FUNCTION notify_auth_changed();
    `);
  }
}
