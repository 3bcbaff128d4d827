// Public clients of the authorization server (RFC 7591): registration, lookup, and the pruning of
// registrations nobody used. Redirect URIs are matched exactly; only https, or http on a loopback
// address (native apps, RFC 8252 7.3), is accepted.
import type { DataSource } from "typeorm";
import { newId } from "../ids.js";

export const CLIENT_PREFIX = "ocl";
/** Registrations that never led to an approval are removed after this long. */
export const UNUSED_CLIENT_TTL_MS = 24 * 3600_000;

export class OAuthProtocolError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

export interface OAuthClient {
  id: string;
  name: string | null;
  redirectUris: string[];
  createdAt: Date;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Why `uri` cannot be a redirect URI, or null when it can. */
export function redirectUriProblem(uri: string): string | null {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `${uri} is not an absolute URL`;
  }
  if (u.hash) return `${uri} has a fragment`;
  if (u.protocol === "https:") return null;
  if (u.protocol === "http:" && LOOPBACK.has(u.hostname)) return null;
  return `${uri} must use https, or http on a loopback address`;
}

export interface Registration {
  redirect_uris: string[];
  client_name?: string | undefined;
  token_endpoint_auth_method?: string | undefined;
  grant_types?: string[] | undefined;
  response_types?: string[] | undefined;
}

export async function registerClient(db: DataSource, body: Registration): Promise<OAuthClient> {
  for (const uri of body.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthProtocolError("invalid_redirect_uri", problem);
  }
  if (body.token_endpoint_auth_method !== undefined && body.token_endpoint_auth_method !== "none") {
    throw new OAuthProtocolError("invalid_client_metadata", "Only public clients are registered: token_endpoint_auth_method must be none.");
  }
  const unknownGrant = body.grant_types?.find((g) => g !== "authorization_code" && g !== "refresh_token");
  if (unknownGrant) throw new OAuthProtocolError("invalid_client_metadata", `The grant type ${unknownGrant} is not supported.`);
  const unknownResponse = body.response_types?.find((r) => r !== "code");
  if (unknownResponse) throw new OAuthProtocolError("invalid_client_metadata", `The response type ${unknownResponse} is not supported.`);
  const client: OAuthClient = { id: newId(CLIENT_PREFIX), name: body.client_name ?? null, redirectUris: [...new Set(body.redirect_uris)], createdAt: new Date() };
  await db.query(`INSERT INTO oauth_clients (id, client_name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)`, [
    client.id,
    client.name,
    JSON.stringify(client.redirectUris),
    client.createdAt,
  ]);
  return client;
}

export async function findClient(db: DataSource, id: string): Promise<OAuthClient | null> {
  const rows: { id: string; client_name: string | null; redirect_uris: string[]; created_at: Date }[] = await db.query(
    `SELECT id, client_name, redirect_uris, created_at FROM oauth_clients WHERE id = $1`,
    [id],
  );
  const r = rows[0];
  return r ? { id: r.id, name: r.client_name, redirectUris: r.redirect_uris, createdAt: r.created_at } : null;
}

/**
 * Removes what can no longer be used: registrations older than a day that no member approved,
 * approvals whose code was never exchanged, expired codes and expired tokens.
 */
export async function pruneOAuth(db: DataSource, now = new Date()): Promise<void> {
  const cutoff = new Date(now.getTime() - UNUSED_CLIENT_TTL_MS);
  await db.query(`DELETE FROM oauth_codes WHERE expires_at < $1`, [now]);
  await db.query(`DELETE FROM oauth_tokens WHERE expires_at < $1`, [now]);
  await db.query(`DELETE FROM oauth_grants WHERE issued_at IS NULL AND created_at < $1`, [cutoff]);
  await db.query(
    `DELETE FROM oauth_clients c
      WHERE c.created_at < $1 AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id AND g.revoked_at IS NULL)`,
    [cutoff],
  );
}
