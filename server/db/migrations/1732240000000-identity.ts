import type { MigrationInterface, QueryRunner } from "typeorm";

/** Plans, workspaces, users, members, invitations, sign-in, sessions, API keys, usage, audit, rate limits. */
export class Identity1732240000000 implements MigrationInterface {
  name = "Identity1732240000000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE plans (
        id text PRIMARY KEY,
        name text NOT NULL,
        rank integer NOT NULL,
        max_connections integer,
        messages_per_month integer,
        scheduling boolean NOT NULL,
        connection_webhooks boolean NOT NULL,
        ai boolean NOT NULL,
        mcp boolean NOT NULL,
        member_management boolean NOT NULL
      );
      INSERT INTO plans VALUES
        ('free', 'Free', 0, 1, 1000, false, false, false, false, false),
        ('pro', 'Pro', 1, 10, 100000, true, true, true, true, true),
        ('enterprise', 'Enterprise', 2, NULL, NULL, true, true, true, true, true);

      CREATE TABLE workspaces (
        id text PRIMARY KEY,
        name text NOT NULL,
        plan_id text NOT NULL REFERENCES plans(id),
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE users (
        id text PRIMARY KEY,
        email text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE members (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        user_id text NOT NULL REFERENCES users(id),
        role text NOT NULL CHECK (role IN ('owner','admin','developer','viewer','billing')),
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, user_id)
      );
      CREATE INDEX members_user ON members(user_id);

      CREATE TABLE invitations (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        email text NOT NULL,
        role text NOT NULL,
        token_digest bytea NOT NULL UNIQUE,
        invited_by text NOT NULL REFERENCES users(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        accepted_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX invitations_email ON invitations(email) WHERE accepted_at IS NULL AND revoked_at IS NULL;

      CREATE TABLE sign_in_codes (
        email text PRIMARY KEY,
        code_digest bytea NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE sessions (
        id text PRIMARY KEY,
        token_digest bytea NOT NULL UNIQUE,
        user_id text NOT NULL REFERENCES users(id),
        -- null until the user belongs to a workspace (signed in to accept an invitation)
        workspace_id text REFERENCES workspaces(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );

      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        name text NOT NULL,
        prefix text NOT NULL,
        digest bytea NOT NULL UNIQUE,
        environment text NOT NULL CHECK (environment IN ('live','test')),
        scopes text[] NOT NULL,
        created_by text NOT NULL REFERENCES users(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX api_keys_workspace ON api_keys(workspace_id, created_at DESC);

      -- Counters are spread over 16 shards per day so concurrent sends of one workspace do not
      -- queue on a single row lock; readers sum the shards.
      CREATE TABLE usage_daily (
        workspace_id text NOT NULL, -- no foreign key: written with every message (see messages)
        day date NOT NULL,
        shard smallint NOT NULL DEFAULT 0,
        messages_outbound integer NOT NULL DEFAULT 0,
        messages_inbound integer NOT NULL DEFAULT 0,
        PRIMARY KEY (workspace_id, day, shard)
      );

      CREATE TABLE audit_log (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        actor_user_id text,
        credential_type text NOT NULL,
        credential_id text,
        action text NOT NULL,
        target_type text NOT NULL,
        target_id text NOT NULL,
        details jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX audit_log_workspace ON audit_log(workspace_id, created_at DESC);

      CREATE TABLE rate_limits (
        bucket text NOT NULL,
        window_start timestamptz NOT NULL,
        hits integer NOT NULL,
        PRIMARY KEY (bucket, window_start)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE rate_limits, audit_log, usage_daily, api_keys, sessions, sign_in_codes, invitations, members, users, workspaces, plans`);
  }
}
