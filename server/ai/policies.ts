// Per-connection AI policies (docs/ai.md): PUT replaces the whole policy, defaults filling the
// omitted optional fields; a connection without one has AI off, and GET of it is 404 (the list
// leaves it out).
import type { DataSource, EntityManager } from "typeorm";
import type { AiPolicy, AiPolicyBody } from "../../contract/index.js";
import { rows } from "../db/rows.js";
import { ApiError } from "../http/errors.js";
import type { Principal } from "../http/principal.js";
import { audit } from "../workspace/audit.js";

interface PolicyRow {
  connection: string;
  credential_id: string;
  enabled: boolean;
  mode: AiPolicy["mode"];
  model: string;
  system_instruction: string;
  max_context_bytes: number;
  max_output_tokens: number;
  // bigint columns arrive as strings from pg
  monthly_cost_limit_micros: string | null;
  input_cost_micros_per_million: string;
  output_cost_micros_per_million: string;
  updated_at: Date;
}

function view(r: PolicyRow): AiPolicy {
  return {
    connection: r.connection,
    credential_id: r.credential_id,
    enabled: r.enabled,
    mode: r.mode,
    model: r.model,
    system_instruction: r.system_instruction,
    max_context_bytes: r.max_context_bytes,
    max_output_tokens: r.max_output_tokens,
    monthly_cost_limit_micros: r.monthly_cost_limit_micros === null ? null : Number(r.monthly_cost_limit_micros),
    input_cost_micros_per_million: Number(r.input_cost_micros_per_million),
    output_cost_micros_per_million: Number(r.output_cost_micros_per_million),
    updated_at: r.updated_at.toISOString(),
  };
}

const SELECT_POLICIES = `SELECT c.slug AS connection, p.credential_id, p.enabled, p.mode, p.model, p.system_instruction, p.max_context_bytes,
                 p.max_output_tokens, p.monthly_cost_limit_micros, p.input_cost_micros_per_million, p.output_cost_micros_per_million, p.updated_at
                         FROM ai_policies p JOIN connections c ON c.id = p.connection_id`;
const SELECT_POLICY = `${SELECT_POLICIES} WHERE p.connection_id = $1`;

/** The workspace's live connection by slug, or 404 (another workspace's slug is unknown here). */
async function liveConnection(q: DataSource | EntityManager, principal: Principal, slug: string): Promise<{ id: string }> {
  const [connection] = await rows<{ id: string }>(q, `SELECT id FROM connections WHERE workspace_id = $1 AND slug = $2 AND deleted_at IS NULL`, [
    principal.workspaceId,
    slug,
  ]);
  if (!connection) throw ApiError.notFound("connection");
  return connection;
}

export class AiPolicyService {
  constructor(private readonly db: DataSource) {}

  async set(principal: Principal, slug: string, body: AiPolicyBody): Promise<AiPolicy> {
    return this.db.transaction(async (em) => {
      const connection = await liveConnection(em, principal, slug);
      // The credential must be this workspace's and alive when the policy is set; deleting it later
      // is allowed and ends the policy's runs as credential_missing.
      const [credential] = await rows<{ id: string }>(
        em,
        `SELECT id FROM ai_credentials WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL`,
        [body.credential_id, principal.workspaceId],
      );
      if (!credential) throw ApiError.validation([{ path: "credential_id", message: "no such AI credential in this workspace" }]);
      await em.query(
        `INSERT INTO ai_policies (connection_id, workspace_id, credential_id, enabled, mode, model, system_instruction, max_context_bytes,
                                  max_output_tokens, monthly_cost_limit_micros, input_cost_micros_per_million, output_cost_micros_per_million, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, clock_timestamp())
         ON CONFLICT (connection_id) DO UPDATE SET
           credential_id = EXCLUDED.credential_id, enabled = EXCLUDED.enabled, mode = EXCLUDED.mode, model = EXCLUDED.model,
           system_instruction = EXCLUDED.system_instruction, max_context_bytes = EXCLUDED.max_context_bytes,
           max_output_tokens = EXCLUDED.max_output_tokens, monthly_cost_limit_micros = EXCLUDED.monthly_cost_limit_micros,
           input_cost_micros_per_million = EXCLUDED.input_cost_micros_per_million,
           output_cost_micros_per_million = EXCLUDED.output_cost_micros_per_million, updated_at = EXCLUDED.updated_at`,
        [
          connection.id,
          principal.workspaceId,
          body.credential_id,
          body.enabled,
          body.mode,
          body.model,
          body.system_instruction,
          body.max_context_bytes,
          body.max_output_tokens,
          body.monthly_cost_limit_micros,
          body.input_cost_micros_per_million,
          body.output_cost_micros_per_million,
        ],
      );
      // The instruction is the operator's prompt: the audit keeps that it changed, not its text.
      await audit(em, principal, "ai_policy.set", { type: "connection", id: connection.id }, {
        connection: slug,
        credential_id: body.credential_id,
        enabled: body.enabled,
        mode: body.mode,
        model: body.model,
      });
      const [saved] = await rows<PolicyRow>(em, SELECT_POLICY, [connection.id]);
      return view(saved!);
    });
  }

  /** Every live connection's policy, by slug. */
  async list(principal: Principal): Promise<AiPolicy[]> {
    const found = await rows<PolicyRow>(this.db, `${SELECT_POLICIES} WHERE c.workspace_id = $1 AND c.deleted_at IS NULL ORDER BY c.slug`, [principal.workspaceId]);
    return found.map(view);
  }

  /** The connection's policy; 404 when the connection is unknown or has none (AI is off). */
  async get(principal: Principal, slug: string): Promise<AiPolicy> {
    const connection = await liveConnection(this.db, principal, slug);
    const [found] = await rows<PolicyRow>(this.db, SELECT_POLICY, [connection.id]);
    if (!found) throw new ApiError("not_found", "This connection has no AI policy: AI is off for it.");
    return view(found);
  }
}
