// Access and refresh tokens of the tool endpoint: minted as random strings with their prefix,
// stored only as SHA-256 digests, resolved in one query joined to the approving member's current
// membership, so a role change caps the token and a removal ends it at once (as for API keys).
import type { DataSource, EntityManager } from "typeorm";
import type { Role } from "../../contract/common.js";
import { MCP_SCOPES } from "../../contract/oauth.js";
import { PLAN_COLUMNS, planFromRow, type PlanRow } from "../auth/credentials.js";
import type { OAuthPrincipal } from "../http/principal.js";
import { randomToken, sha256 } from "../secrets.js";
import { PERMISSIONS } from "../workspace/roles.js";

export const ACCESS_TOKEN_PREFIX = "svc_mcp_at_";
export const REFRESH_TOKEN_PREFIX = "svc_mcp_rt_";
export const ACCESS_TOKEN_TTL_S = 3600;
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 3600;

export { MCP_SCOPES };

/** What each scope lets a client do, as the consent page says it. */
export const MCP_SCOPE_TEXT: Record<(typeof MCP_SCOPES)[number], string> = {
  "mcp:read": "See the workspace's connections, message statuses (never their content), schedules, usage and webhook deliveries",
  "mcp:write": "Send messages, cancel messages, and pause, resume or cancel schedules (each previewed before it acts)",
};

export interface IssuedTokens {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** Writes a fresh access and refresh token for `grantId` inside the caller's transaction. */
export async function issueTokens(em: EntityManager, grantId: string, scopes: readonly string[]): Promise<IssuedTokens> {
  const access = ACCESS_TOKEN_PREFIX + randomToken(32);
  const refresh = REFRESH_TOKEN_PREFIX + randomToken(32);
  await em.query(
    `INSERT INTO oauth_tokens (digest, grant_id, kind, expires_at) VALUES
       ($1, $3, 'access', now() + make_interval(secs => $4)), ($2, $3, 'refresh', now() + make_interval(secs => $5))`,
    [sha256(access), sha256(refresh), grantId, ACCESS_TOKEN_TTL_S, REFRESH_TOKEN_TTL_S],
  );
  return { access_token: access, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_S, refresh_token: refresh, scope: scopes.join(" ") };
}

/** What the approving member's current role still allows of the approved scopes. */
export function cappedScopes(approved: readonly string[], role: Role): (typeof MCP_SCOPES)[number][] {
  const permission = PERMISSIONS[role];
  if (!permission.approveOAuth) return [];
  return MCP_SCOPES.filter((s) => approved.includes(s) && permission.grantableScopes.includes(s));
}

const LAST_USED_RESOLUTION_MS = 60_000;
const lastUsedWritten = new Map<string, number>();

/** The principal of a live access token, or null (unknown, expired, revoked, member gone). */
export async function resolveAccessToken(db: DataSource, token: string): Promise<OAuthPrincipal | null> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) || token.length > 200) return null;
  const rows: (PlanRow & { grant_id: string; client_id: string; workspace_id: string; user_id: string; scopes: string[]; role: Role })[] = await db.query(
    `SELECT g.id AS grant_id, g.client_id, g.workspace_id, g.user_id, g.scopes, m.role, ${PLAN_COLUMNS}
       FROM oauth_tokens t
       JOIN oauth_grants g ON g.id = t.grant_id AND g.revoked_at IS NULL
       JOIN members m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id
       JOIN workspaces w ON w.id = g.workspace_id
       JOIN plans p ON p.id = w.plan_id
      WHERE t.digest = $1 AND t.kind = 'access' AND t.expires_at > now()`,
    [sha256(token)],
  );
  const r = rows[0];
  if (!r) return null;
  const now = Date.now();
  if ((lastUsedWritten.get(r.grant_id) ?? 0) < now - LAST_USED_RESOLUTION_MS) {
    lastUsedWritten.set(r.grant_id, now);
    await db.query(`UPDATE oauth_grants SET last_used_at = now() WHERE id = $1`, [r.grant_id]);
  }
  return {
    kind: "oauth",
    workspaceId: r.workspace_id,
    userId: r.user_id,
    plan: planFromRow(r),
    tokenId: r.grant_id,
    clientId: r.client_id,
    scopes: cappedScopes(r.scopes, r.role),
  };
}
