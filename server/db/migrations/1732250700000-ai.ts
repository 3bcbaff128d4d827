import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * AI assistance (docs/ai.md): model-vendor credentials and per-connection policies. The vendor key is
 * stored sealed (AES-256-GCM) with the id of the key that sealed it, so SECRET_KEY can rotate; only
 * its last four characters are kept in the clear, as the fingerprint the list shows.
 */
export class Ai1732250700000 implements MigrationInterface {
  name = "Ai1732250700000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_credentials (
        id uuid PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        provider text NOT NULL,
        label text NOT NULL,
        base_url text,
        api_key_sealed text NOT NULL,
        key_id text NOT NULL,
        fingerprint text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        deleted_at timestamptz
      );
      CREATE INDEX ai_credentials_workspace ON ai_credentials(workspace_id, created_at DESC) WHERE deleted_at IS NULL;
      CREATE TABLE ai_policies (
        connection_id text PRIMARY KEY REFERENCES connections(id),
        workspace_id text NOT NULL REFERENCES workspaces(id),
        -- no foreign key: a credential may be deleted while a policy names it (its runs then end credential_missing)
        credential_id uuid NOT NULL,
        enabled boolean NOT NULL,
        mode text NOT NULL,
        model text NOT NULL,
        system_instruction text NOT NULL,
        max_context_bytes integer NOT NULL,
        max_output_tokens integer NOT NULL,
        monthly_cost_limit_micros bigint,
        input_cost_micros_per_million bigint NOT NULL,
        output_cost_micros_per_million bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_policies, ai_credentials`);
  }
}
