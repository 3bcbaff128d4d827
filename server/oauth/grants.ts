// Grants: one per approval on the consent page. The code and every token hang off the grant, so
// revoking it (by the member, by a replayed refresh token, by a second use of a code) ends them
// all at once. Codes live 10 minutes and work once; refresh tokens rotate at every use.
import { createHash } from "node:crypto";
import type { DataSource } from "typeorm";
import type { Role } from "../../contract/common.js";
import { newId } from "../ids.js";
import { randomToken, sha256 } from "../secrets.js";
import { OAuthProtocolError } from "./clients.js";
import { cappedScopes, issueTokens, REFRESH_TOKEN_PREFIX, type IssuedTokens } from "./tokens.js";

export const CODE_TTL_S = 600;

export interface Approval {
  workspaceId: string;
  userId: string;
  clientId: string;
  clientName: string | null;
  redirectUri: string;
  scopes: string[];
  resource: string;
  codeChallenge: string;
}

/** Records the approval and returns its one-time code. */
export async function approve(db: DataSource, a: Approval): Promise<string> {
  const code = randomToken(32);
  const grantId = newId("oag");
  await db.transaction(async (em) => {
    await em.query(
      `INSERT INTO oauth_grants (id, workspace_id, user_id, client_id, client_name, redirect_uri, scopes, resource)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [grantId, a.workspaceId, a.userId, a.clientId, a.clientName, a.redirectUri, a.scopes, a.resource],
    );
    await em.query(`INSERT INTO oauth_codes (digest, grant_id, code_challenge, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))`, [
      sha256(code),
      grantId,
      a.codeChallenge,
      CODE_TTL_S,
    ]);
  });
  return code;
}

export interface CodeExchange {
  code: string;
  codeVerifier: string | undefined;
  redirectUri: string | undefined;
  clientId: string | undefined;
  resource: string | undefined;
}

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

function s256(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

const invalidGrant = (why: string) => new OAuthProtocolError("invalid_grant", why);

interface GrantRow {
  id: string;
  client_id: string;
  redirect_uri: string;
  resource: string;
  scopes: string[];
  role: Role | null;
}

const GRANT_COLUMNS = `g.id, g.client_id, g.redirect_uri, g.resource, g.scopes, m.role`;
const MEMBER_JOIN = `LEFT JOIN members m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id`;

/** Scopes the grant still carries, or an error when its member may approve nothing any more. */
function liveScopes(g: GrantRow): string[] {
  const scopes = g.role ? cappedScopes(g.scopes, g.role) : [];
  if (scopes.length === 0) throw invalidGrant("The member who approved this client can no longer approve it.");
  return scopes;
}

export async function exchangeCode(db: DataSource, x: CodeExchange): Promise<IssuedTokens> {
  const outcome = await db.transaction(async (em) => {
    const rows: (GrantRow & { code_challenge: string; used_at: Date | null; expired: boolean })[] = await em.query(
      `SELECT ${GRANT_COLUMNS}, c.code_challenge, c.used_at, c.expires_at <= now() AS expired
         FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id ${MEMBER_JOIN}
        WHERE c.digest = $1 AND g.revoked_at IS NULL
        FOR UPDATE OF c, g`,
      [sha256(x.code)],
    );
    const g = rows[0];
    if (!g) return invalidGrant("The code is unknown or was revoked.");
    if (g.used_at) {
      // A second use: someone else may hold the code. End whatever the first use issued.
      await em.query(`UPDATE oauth_grants SET revoked_at = now() WHERE id = $1`, [g.id]);
      return invalidGrant("The code was already used; the tokens issued for it are revoked.");
    }
    // Any attempt spends the code, so a verifier cannot be guessed over several tries.
    await em.query(`UPDATE oauth_codes SET used_at = now() WHERE digest = $1`, [sha256(x.code)]);
    if (g.expired) return invalidGrant("The code has expired.");
    if (x.clientId !== g.client_id) return invalidGrant("The code was issued to another client.");
    if (x.redirectUri !== g.redirect_uri) return invalidGrant("redirect_uri does not match the authorization request.");
    if (x.resource !== undefined && x.resource !== g.resource) return new OAuthProtocolError("invalid_target", "The resource does not match the authorization request.");
    if (!x.codeVerifier || !VERIFIER.test(x.codeVerifier) || s256(x.codeVerifier) !== g.code_challenge) {
      return invalidGrant("The code_verifier does not match the code_challenge.");
    }
    let scopes: string[];
    try {
      scopes = liveScopes(g);
    } catch (err) {
      return err as OAuthProtocolError;
    }
    await em.query(`UPDATE oauth_grants SET issued_at = now(), last_used_at = now() WHERE id = $1`, [g.id]);
    return issueTokens(em, g.id, scopes);
  });
  // Refusals commit too (the spent code, the revoked grant), so they are returned, then thrown.
  if (outcome instanceof OAuthProtocolError) throw outcome;
  return outcome;
}

export async function refresh(db: DataSource, token: string, clientId: string, resource: string | undefined): Promise<IssuedTokens> {
  const outcome = await db.transaction(async (em) => {
    if (!token.startsWith(REFRESH_TOKEN_PREFIX)) return invalidGrant("The refresh token is unknown.");
    const rows: (GrantRow & { used_at: Date | null; expired: boolean })[] = await em.query(
      `SELECT ${GRANT_COLUMNS}, t.used_at, t.expires_at <= now() AS expired
         FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id ${MEMBER_JOIN}
        WHERE t.digest = $1 AND t.kind = 'refresh' AND g.revoked_at IS NULL
        FOR UPDATE OF t, g`,
      [sha256(token)],
    );
    const g = rows[0];
    if (!g) return invalidGrant("The refresh token is unknown or revoked.");
    if (g.used_at) {
      // A rotated token came back: it leaked, or the client is confused. Revoke the whole grant.
      await em.query(`UPDATE oauth_grants SET revoked_at = now() WHERE id = $1`, [g.id]);
      return invalidGrant("The refresh token was already used; every token of this authorization is revoked.");
    }
    if (g.expired) return invalidGrant("The refresh token has expired.");
    if (clientId !== g.client_id) return invalidGrant("The refresh token was issued to another client.");
    if (resource !== undefined && resource !== g.resource) return new OAuthProtocolError("invalid_target", "The resource does not match the authorization.");
    let scopes: string[];
    try {
      scopes = liveScopes(g);
    } catch (err) {
      return err as OAuthProtocolError;
    }
    await em.query(`UPDATE oauth_tokens SET used_at = now() WHERE digest = $1`, [sha256(token)]);
    await em.query(`UPDATE oauth_grants SET last_used_at = now() WHERE id = $1`, [g.id]);
    return issueTokens(em, g.id, scopes);
  });
  if (outcome instanceof OAuthProtocolError) throw outcome;
  return outcome;
}

/**
 * Whether a member has approved `clientId` with `redirectUri` (an approval not since revoked): only
 * then is an authorization error sent to that URI rather than shown (RFC 9700 4.11.2).
 */
export async function approvedRedirect(db: DataSource, clientId: string, redirectUri: string): Promise<boolean> {
  const found: unknown[] = await db.query(`SELECT 1 FROM oauth_grants WHERE client_id = $1 AND redirect_uri = $2 AND revoked_at IS NULL LIMIT 1`, [clientId, redirectUri]);
  return found.length > 0;
}

export interface AuthorizedClient {
  id: string;
  client_id: string;
  client_name: string | null;
  redirect_host: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
}

/** The clients a member approved in this workspace that still hold tokens, newest first. */
export async function listGrants(db: DataSource, workspaceId: string, userId: string): Promise<AuthorizedClient[]> {
  const rows: { id: string; client_id: string; client_name: string | null; redirect_uri: string; scopes: string[]; issued_at: Date; last_used_at: Date | null }[] =
    await db.query(
      `SELECT id, client_id, client_name, redirect_uri, scopes, issued_at, last_used_at FROM oauth_grants
        WHERE workspace_id = $1 AND user_id = $2 AND issued_at IS NOT NULL AND revoked_at IS NULL
        ORDER BY id DESC`,
      [workspaceId, userId],
    );
  return rows.map((r) => ({
    id: r.id,
    client_id: r.client_id,
    client_name: r.client_name,
    redirect_host: new URL(r.redirect_uri).host,
    scopes: r.scopes,
    created_at: r.issued_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
  }));
}

/** Revokes one of the member's grants and with it every token; false when there is none. */
export async function revokeGrant(db: DataSource, workspaceId: string, userId: string, id: string): Promise<boolean> {
  // TypeORM answers an UPDATE … RETURNING on PostgreSQL with [rows, affected count].
  const [rows]: [unknown[], number] = await db.query(
    `UPDATE oauth_grants SET revoked_at = now() WHERE id = $1 AND workspace_id = $2 AND user_id = $3 AND issued_at IS NOT NULL AND revoked_at IS NULL RETURNING id`,
    [id, workspaceId, userId],
  );
  return rows.length > 0;
}
