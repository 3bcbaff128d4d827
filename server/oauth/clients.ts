// Public clients of the authorization server (RFC 7591): registration, lookup, and the pruning of
// registrations nobody used. Redirect URIs are matched exactly; only https, or http on a loopback
// address (native apps, RFC 8252 7.3), is accepted.
import type { DataSource } from "typeorm";
import { newId } from "../ids.js";
import type { UrlCheckOptions } from "../outbound/address-policy.js";
import { requestThroughPolicy, WebhookDeliveryError } from "../outbound/safe-request.js";

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
  // https://trusted.example@evil.example/ reads as the first host to a person and goes to the second.
  if (u.username || u.password) return `${uri} has user information (user:password@) before its host`;
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

/** Client ID Metadata Documents are small; anything larger is refused (as the draft suggests, 5 KiB). */
export const METADATA_DOCUMENT_MAX_BYTES = 5 * 1024;
const METADATA_DOCUMENT_TIMEOUT_MS = 5_000;

/** A client_id that is a URL names a Client ID Metadata Document rather than a registration. */
export function isMetadataDocumentId(clientId: string): boolean {
  return clientId.startsWith("https://") || clientId.startsWith("http://");
}

/**
 * The client a Client ID Metadata Document describes, fetched through the outbound address policy
 * (https only unless OUTBOUND_ALLOW_PRIVATE opens a range, the resolved address checked, no
 * redirects). The document must name itself as client_id and list its redirect URIs.
 */
export async function clientFromMetadataDocument(clientId: string, outbound: UrlCheckOptions): Promise<OAuthClient> {
  const url = new URL(clientId);
  if (url.hash || url.username || url.password || url.pathname === "/") {
    throw new OAuthProtocolError("invalid_client", "A client_id URL must have a path and no fragment or credentials.");
  }
  let doc: unknown;
  try {
    const res = await requestThroughPolicy(clientId, outbound, {
      method: "GET",
      body: "",
      keepBody: true,
      headers: { accept: "application/json" },
      maxResponseBytes: METADATA_DOCUMENT_MAX_BYTES + 1,
      timeoutMs: METADATA_DOCUMENT_TIMEOUT_MS,
    });
    if (res.status !== 200) throw new OAuthProtocolError("invalid_client", `The client metadata document answered ${res.status}.`);
    if (res.truncated) throw new OAuthProtocolError("invalid_client", `The client metadata document is larger than ${METADATA_DOCUMENT_MAX_BYTES} bytes.`);
    doc = JSON.parse(res.body!.toString("utf8"));
  } catch (err) {
    if (err instanceof OAuthProtocolError) throw err;
    if (err instanceof WebhookDeliveryError) throw new OAuthProtocolError("invalid_client", `The client metadata document cannot be fetched (${err.reason}).`);
    throw new OAuthProtocolError("invalid_client", "The client metadata document is not JSON.");
  }
  const d = (typeof doc === "object" && doc !== null ? doc : {}) as Record<string, unknown>;
  if (d.client_id !== clientId) throw new OAuthProtocolError("invalid_client", "The client metadata document must name its own URL as client_id.");
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === "string" && redirectUriProblem(u) === null)) {
    throw new OAuthProtocolError("invalid_client", "The client metadata document needs redirect_uris: https, or http on a loopback address.");
  }
  if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== "none") {
    throw new OAuthProtocolError("invalid_client", "Only public clients are supported: token_endpoint_auth_method must be none.");
  }
  const name = typeof d.client_name === "string" && d.client_name.length > 0 ? d.client_name.slice(0, 200) : null;
  return { id: clientId, name, redirectUris: uris as string[], createdAt: new Date() };
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
