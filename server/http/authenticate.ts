// The one authentication, scope and plan check, driven by the metadata declared on each contract
// route. It runs before request validation, so an unauthenticated caller learns nothing about a
// route's input rules.
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { DataSource } from "typeorm";
import { parse as parseCookies } from "cookie";
import type { AppRoute } from "@ts-rest/core";
import type { PlanFeature, RouteMetadata, Scope } from "../../contract/common.js";
import { resolveApiKey, resolveSession } from "../auth/credentials.js";
import { ACCESS_TOKEN_PREFIX, resolveAccessToken } from "../oauth/tokens.js";
import type { ApiKeyCache } from "../auth/key-cache.js";
import { SESSION_COOKIE } from "../auth/session-cookie.js";
import { sessionMayUse } from "../../contract/permissions.js";
import { requirePlanFeature } from "../workspace/plan-gate.js";
import { ApiError } from "./errors.js";
import { isJsonContentType } from "./json-body.js";
import type { Principal } from "./principal.js";
import { rateLimitHeaders, TokenBucketLimiter } from "./rate-limit.js";

export interface AuthenticateOptions {
  db: DataSource;
  /** Resolved keys of this process; absent: every request looks its key up. */
  keyCache?: ApiKeyCache;
  /** Origins whose browsers may make cookie-authenticated mutations (the dashboard). */
  trustedOrigins: string[];
  /** Per credential and process: a token bucket refilled at perMinute / 60 a second, holding burst. */
  rateLimit: { perMinute: number; burst: number };
  /** Named in the WWW-Authenticate header of the tool resource's 401 (docs/mcp.md). */
  mcpResourceMetadataUrl: string;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function authenticate(options: AuthenticateOptions): RequestHandler {
  const limiter = new TokenBucketLimiter(options.rateLimit.perMinute / 60, options.rateLimit.burst);
  return (req, res, next) => {
    const route = (req as Request & { tsRestRoute?: AppRoute }).tsRestRoute;
    const meta = route?.metadata as RouteMetadata | undefined;
    if (!meta || meta.security.auth === "none") return next();
    run(req, res, meta).then(() => next(), next);
  };

  async function run(req: Request, res: Response, meta: RouteMetadata): Promise<void> {
    const security = meta.security;
    const bearer = bearerToken(req);
    let principal: Principal | null;
    switch (security.auth) {
      case "none":
        return;
      case "session":
        principal = await sessionPrincipal(req, res);
        break;
      case "key":
        principal = await keyPrincipal(bearer, res, security.scope);
        break;
      case "key_or_session":
        principal = bearer !== undefined ? await keyPrincipal(bearer, res, security.scope) : await sessionPrincipal(req, res);
        if (principal?.kind === "session") {
          if (!sessionMayUse(principal.role, security.scope)) {
            throw new ApiError("forbidden", `Your role (${principal.role}) cannot do this: it needs ${security.scope}.`);
          }
          // On a key's route the member is counted where a key would be: one bucket per member and
          // workspace, shared by all their sessions, so the dashboard is no way around the rate.
          limitRate(`member:${principal.workspaceId}:${principal.userId}`, "member", res);
        }
        break;
      case "mcp":
        principal = await mcpPrincipal(bearer, res, security.scope);
        break;
    }
    if (!principal) {
      // Signed in but not yet a member anywhere: only routes that read res.locals.user serve them.
      if (meta.feature) throw new ApiError("forbidden", "You are not a member of a workspace yet; accept an invitation first.");
      return;
    }
    res.locals.principal = principal;
    if (meta.feature) await requirePlanFeature(options.db, principal.plan, meta.feature as PlanFeature);
  }

  async function keyPrincipal(bearer: string | undefined, res: Response, scope: Scope | undefined): Promise<Principal> {
    if (!bearer) throw new ApiError("unauthorized", "Send an API key as `Authorization: Bearer svc_live_…`.");
    const principal = await resolveApiKey(options.db, bearer, options.keyCache);
    if (!principal) throw unknownKey();
    limitRate(principal.keyId, "key", res);
    requireScope(principal.scopes, scope);
    return principal;
  }

  /** Per credential (an API key, or an OAuth grant) and process: one token bucket each. */
  function limitRate(credentialId: string, what: string, res: Response): void {
    const decision = limiter.take(credentialId);
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      throw new ApiError("rate_limited", `This ${what} may make ${options.rateLimit.perMinute} requests a minute, up to ${decision.limit} at once.`, { headers });
    }
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  }

  /** The tool resource: an OAuth access token, or an API key; a 401 names the resource metadata. */
  async function mcpPrincipal(bearer: string | undefined, res: Response, scope: Scope): Promise<Principal> {
    try {
      if (bearer?.startsWith(ACCESS_TOKEN_PREFIX)) {
        const principal = await resolveAccessToken(options.db, bearer);
        if (!principal) throw new ApiError("unauthorized", "The access token is unknown, expired or revoked.");
        limitRate(principal.tokenId, "authorization", res);
        requireScope(principal.scopes, scope);
        return principal;
      }
      return await keyPrincipal(bearer ?? missingMcpCredential(), res, scope);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        const error = bearer ? ', error="invalid_token"' : "";
        err.extra.headers = { ...err.extra.headers, "WWW-Authenticate": `Bearer resource_metadata="${options.mcpResourceMetadataUrl}"${error}` };
      }
      throw err;
    }
  }

  async function sessionPrincipal(req: Request, res: Response): Promise<Principal | null> {
    const token = parseCookies(req.headers.cookie ?? "")[SESSION_COOKIE];
    const resolved = token ? await resolveSession(options.db, token) : null;
    if (!resolved) throw new ApiError("unauthorized", "Sign in first: POST /v1/auth/request-code, then /v1/auth/verify.");
    if (!SAFE_METHODS.has(req.method) && isCrossSite(req, options.trustedOrigins)) {
      throw new ApiError(
        "cross_site_request",
        "A change made with the session cookie must come from the dashboard's own origin: send JSON (Content-Type: application/json), or Origin / Sec-Fetch-Site naming this origin.",
      );
    }
    res.locals.user = resolved.user;
    return resolved.principal;
  }
}

export function requireScope(held: readonly Scope[], scope: Scope | undefined): void {
  if (scope && !held.includes(scope)) {
    throw new ApiError("insufficient_scope", `This operation requires the scope ${scope}.`, { required_scope: scope });
  }
}

export function unknownKey(): ApiError {
  return new ApiError("unauthorized", "The API key is malformed, unknown or revoked.");
}

function missingMcpCredential(): never {
  throw new ApiError("unauthorized", "Send an OAuth access token (svc_mcp_at_…) or an API key with mcp:read as `Authorization: Bearer …`.");
}

/** The bearer credential of the Authorization header; 401 when the header has another shape. */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new ApiError("unauthorized", "The Authorization header must be `Bearer <key>`.");
  return m[1];
}

/**
 * Whether a cookie-authenticated change provably comes from the gateway's own pages. A cross-site
 * form can send only a form, multipart or text body (or none) and sets neither header below to
 * our origin; JSON needs a CORS preflight, which this server never grants with credentials. So a
 * change is accepted only when the browser says it is same-origin (`Sec-Fetch-Site`, `Origin`) or
 * when it is JSON; any sign of another site (an `Origin` or `Sec-Fetch-Site` naming one) refuses it
 * whatever its type. A non-browser client sending a session cookie without a body says
 * `Content-Type: application/json` or its `Origin` (the SDK does).
 */
export function isCrossSite(req: Request, trustedOrigins: string[]): boolean {
  const origin = req.headers.origin;
  const site = req.headers["sec-fetch-site"];
  const trustedOrigin = origin !== undefined && trustedOrigins.includes(origin);
  if (origin !== undefined && !trustedOrigin) return true;
  if ((site === "cross-site" || site === "same-site") && !trustedOrigin) return true;
  return !(trustedOrigin || site === "same-origin" || isJsonContentType(req.headers["content-type"]));
}

export type { NextFunction };
