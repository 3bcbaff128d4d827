import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * The authorization server of the tool endpoint (docs/mcp.md). One grant per approval: the
 * member, the client, the scopes and the resource they approved; its code and tokens hang off it,
 * so revoking a grant (by the member, by a replayed refresh token, by a reused code) ends them all.
 * Codes and tokens are stored only as SHA-256 digests.
 */
export class OAuth1732250600000 implements MigrationInterface {
  name = "OAuth1732250600000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE oauth_clients (
        id text PRIMARY KEY,
        client_name text,
        redirect_uris jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE oauth_grants (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        user_id text NOT NULL REFERENCES users(id),
        -- a registered client's id, or the https URL of a client metadata document
        client_id text NOT NULL,
        client_name text,
        redirect_uri text NOT NULL,
        scopes text[] NOT NULL,
        resource text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- set when its code is exchanged: only issued grants are shown to the member
        issued_at timestamptz,
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX oauth_grants_member ON oauth_grants(workspace_id, user_id);
      CREATE INDEX oauth_grants_client ON oauth_grants(client_id);
      CREATE TABLE oauth_codes (
        digest bytea PRIMARY KEY,
        grant_id text NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
        code_challenge text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      );
      CREATE TABLE oauth_tokens (
        digest bytea PRIMARY KEY,
        grant_id text NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        -- refresh tokens: when it was exchanged (rotated); a second exchange is a replay
        used_at timestamptz
      );
      CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE oauth_tokens; DROP TABLE oauth_codes; DROP TABLE oauth_grants; DROP TABLE oauth_clients;`);
  }
}
