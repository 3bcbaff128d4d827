// Resolving a presented credential (API key or session cookie) to a principal: one query each,
// joined to the issuer's current membership so a role change or removal takes effect at once.
import type { DataSource } from "typeorm";
import type { Role, Scope } from "../../contract/common.js";
import type { ApiKeyPrincipal, SessionPrincipal, SignedInUser } from "../http/principal.js";
import { parseApiKey } from "../api-keys/key-format.js";
import { prepared } from "../db/prepared.js";
import { sha256 } from "../secrets.js";
import { effectiveScopes } from "../workspace/roles.js";
import type { ApiKeyCache } from "./key-cache.js";
import type { Plan } from "../workspace/entities.js";

export const PLAN_COLUMNS = `p.id AS plan_id, p.name AS plan_name, p.rank AS plan_rank, p.max_connections, p.messages_per_month,
  p.scheduling, p.connection_webhooks, p.ai, p.mcp, p.member_management`;

export interface PlanRow {
  plan_id: string;
  plan_name: string;
  plan_rank: number;
  max_connections: number | null;
  messages_per_month: number | null;
  scheduling: boolean;
  connection_webhooks: boolean;
  ai: boolean;
  mcp: boolean;
  member_management: boolean;
}

export function planFromRow(r: PlanRow): Plan {
  return {
    id: r.plan_id,
    name: r.plan_name,
    rank: r.plan_rank,
    maxConnections: r.max_connections,
    messagesPerMonth: r.messages_per_month,
    scheduling: r.scheduling,
    connectionWebhooks: r.connection_webhooks,
    ai: r.ai,
    mcp: r.mcp,
    memberManagement: r.member_management,
  };
}

/** Keys used within this window are not written again: last_used_at is accurate to a minute. */
const LAST_USED_RESOLUTION_MS = 60_000;
const lastUsedWritten = new Map<string, number>();

/**
 * The principal of an API key, or null for a malformed, unknown or revoked key. With `cache`, a key
 * resolved before is answered from memory (server/auth/key-cache.ts says when that stays true).
 */
export async function resolveApiKey(db: DataSource, key: string, cache?: ApiKeyCache): Promise<ApiKeyPrincipal | null> {
  // The digest once, and first: a cached digest is a key that passed the format check when it
  // was stored, so a hit skips that check (another SHA-256 over the key) altogether.
  const digest = sha256(key);
  const cacheKey = cache ? digest.toString("base64") : "";
  const cached = cache?.get(cacheKey);
  if (cached) {
    await touch(db, cached.keyId);
    return cached;
  }
  if (!parseApiKey(key)) return null;
  const generation = cache?.generationNow() ?? 0;
  const rows: (PlanRow & {
    id: string;
    name: string;
    prefix: string;
    environment: "live" | "test";
    scopes: Scope[];
    created_by: string;
    workspace_id: string;
    role: Role;
  })[] = await prepared(
    db,
    "resolve-api-key",
    `SELECT k.id, k.name, k.prefix, k.environment, k.scopes, k.created_by, k.workspace_id, m.role, ${PLAN_COLUMNS}
       FROM api_keys k
       JOIN members m ON m.workspace_id = k.workspace_id AND m.user_id = k.created_by
       JOIN workspaces w ON w.id = k.workspace_id
       JOIN plans p ON p.id = w.plan_id
      WHERE k.digest = $1 AND k.revoked_at IS NULL`,
    [digest],
  );
  const r = rows[0];
  if (!r) return null;
  await touch(db, r.id);
  const principal: ApiKeyPrincipal = {
    kind: "api_key",
    workspaceId: r.workspace_id,
    userId: r.created_by,
    plan: planFromRow(r),
    keyId: r.id,
    name: r.name,
    prefix: r.prefix,
    environment: r.environment,
    scopes: effectiveScopes(r.scopes, r.role),
  };
  cache?.set(cacheKey, principal, generation);
  return principal;
}

/** Records the key's use, at most once a minute per key and process. */
async function touch(db: DataSource, keyId: string): Promise<void> {
  const now = Date.now();
  if ((lastUsedWritten.get(keyId) ?? 0) >= now - LAST_USED_RESOLUTION_MS) return;
  lastUsedWritten.set(keyId, now);
  await db.query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1`, [keyId]);
}

export interface ResolvedSession {
  user: SignedInUser;
  principal: SessionPrincipal | null;
}

export async function resolveSession(db: DataSource, token: string): Promise<ResolvedSession | null> {
  const rows: (Partial<PlanRow> & { id: string; user_id: string; email: string; workspace_id: string | null; role: Role | null })[] =
    await db.query(
      `SELECT s.id, s.user_id, u.email, m.workspace_id, m.role, ${PLAN_COLUMNS}
         FROM sessions s
         JOIN users u ON u.id = s.user_id
         LEFT JOIN members m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
         LEFT JOIN workspaces w ON w.id = m.workspace_id
         LEFT JOIN plans p ON p.id = w.plan_id
        WHERE s.token_digest = $1 AND s.expires_at > now()`,
      [sha256(token)],
    );
  const r = rows[0];
  if (!r) return null;
  const user = { sessionId: r.id, userId: r.user_id, email: r.email };
  if (!r.workspace_id || !r.role) return { user, principal: null };
  return {
    user,
    principal: {
      kind: "session",
      workspaceId: r.workspace_id,
      userId: r.user_id,
      plan: planFromRow(r as PlanRow),
      sessionId: r.id,
      email: r.email,
      role: r.role,
    },
  };
}
