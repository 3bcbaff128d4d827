// contract.oauth. register, authorize and token answer in their route middleware, before the
// contract's schema check, because their refusals are OAuth's own (RFC 6749 4.1.2.1 and 5.2,
// RFC 7591 3.2.2), not problem documents: a bad client or redirect URI is answered here (never
// redirected to); anything else about an authorization request is redirected to the client when
// a member has approved that client with that redirect URI, and otherwise shown on a page
// (RFC 9700 4.11.2: no open redirect through a self-registered redirect URI).
import type { RequestHandler, Response } from "express";
import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { CONSENT_PAGE_PATH, RegisterClientBody } from "../../contract/oauth.js";
import type { Config } from "../config.js";
import { ApiError, sendProblem } from "../http/errors.js";
import { clientIp, sessionOf } from "../http/principal.js";
import { rateLimitHeaders } from "../http/rate-limit.js";
import { clientRedirect, RequestSigner } from "./authorize-request.js";
import { OAuthProtocolError } from "./clients.js";
import { sendAuthorizationErrorPage } from "./error-page.js";
import { issuerOf, publicCors, toolResourceOf } from "./metadata.js";
import type { OAuthService } from "./service.js";
import { cappedScopes, MCP_SCOPE_TEXT, MCP_SCOPES } from "./tokens.js";

const s = initServer();

const PKCE_S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

function oauthError(res: Response, err: OAuthProtocolError): void {
  res.status(400).setHeader("Cache-Control", "no-store");
  res.json({ error: err.error, error_description: err.description });
}

/** A single string parameter; absent, repeated or non-string values are undefined. */
function param(source: unknown, name: string): string | undefined {
  const v = (source as Record<string, unknown> | undefined)?.[name];
  return typeof v === "string" ? v : undefined;
}

/** RFC 6749 3.1: request parameters are sent once; the first of `names` given more than once. */
function repeatedParam(source: unknown, names: readonly string[]): string | undefined {
  return names.find((name) => Array.isArray((source as Record<string, unknown> | undefined)?.[name]));
}

const givenTwice = (name: string) => `${name} given twice: each parameter is sent once (RFC 6749 3.1)`;

const AUTHORIZE_PARAMS = ["response_type", "client_id", "redirect_uri", "code_challenge", "code_challenge_method", "scope", "state", "resource"] as const;
const TOKEN_PARAMS = ["grant_type", "code", "redirect_uri", "code_verifier", "client_id", "refresh_token", "resource"] as const;

const unreachable = async (): Promise<never> => {
  throw new Error("answered by the route middleware");
};

export function oauthRouter(oauth: OAuthService, config: Pick<Config, "webUrl" | "secretKey">) {
  const issuer = issuerOf(config);
  const resource = toolResourceOf(config);
  const signer = new RequestSigner(config.secretKey);

  const register: RequestHandler = (req, res, next) => {
    (async () => {
      const decision = await oauth.registrationAllowed(clientIp(req));
      if (!decision.allowed) {
        return sendProblem(res, new ApiError("rate_limited", "Too many client registrations from this address; try again later.", { headers: rateLimitHeaders(decision) }));
      }
      const parsed = RegisterClientBody.safeParse(req.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const field = String(issue.path[0] ?? "");
        return oauthError(res, new OAuthProtocolError(field === "redirect_uris" ? "invalid_redirect_uri" : "invalid_client_metadata", `${issue.path.join(".") || "body"}: ${issue.message}`));
      }
      const client = await oauth.register(parsed.data);
      res.status(201).setHeader("Cache-Control", "no-store");
      res.json({
        client_id: client.id,
        client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
        ...(client.name !== null ? { client_name: client.name } : {}),
        redirect_uris: client.redirectUris,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      });
    })().catch((err: unknown) => (err instanceof OAuthProtocolError ? oauthError(res, err) : next(err)));
  };

  const authorize: RequestHandler = (req, res, next) => {
    (async () => {
      const q = req.query;
      // Which client and where to: asked twice, neither can be trusted, so nothing is redirected.
      const ambiguous = repeatedParam(q, ["client_id", "redirect_uri"]);
      if (ambiguous) return sendProblem(res, ApiError.validation([{ path: `query.${ambiguous}`, message: givenTwice(ambiguous) }]));
      const clientId = param(q, "client_id");
      const redirectUri = param(q, "redirect_uri");
      let client;
      try {
        client = !clientId ? null : await oauth.client(clientId);
      } catch (err) {
        if (!(err instanceof OAuthProtocolError)) throw err;
        return sendProblem(res, ApiError.validation([{ path: "query.client_id", message: err.description }]));
      }
      if (!client) return sendProblem(res, ApiError.validation([{ path: "query.client_id", message: "no such client; register it at /v1/oauth/register" }]));
      if (!redirectUri || !client.redirectUris.includes(redirectUri)) {
        return sendProblem(res, ApiError.validation([{ path: "query.redirect_uri", message: "must be exactly one of the client's registered redirect URIs" }]));
      }
      const state = param(q, "state") ?? null;
      const trusted = await oauth.approvedRedirect(client.id, redirectUri);
      const refuse = (error: string, description: string) =>
        trusted
          ? res.redirect(302, clientRedirect({ redirectUri, state }, issuer, { error, error_description: description }))
          : sendAuthorizationErrorPage(res, {
              error,
              description,
              client: client.name ?? client.id,
              why: `No member has approved this application with ${new URL(redirectUri).host} yet, so you are not sent there.`,
            });
      const repeated = repeatedParam(q, AUTHORIZE_PARAMS);
      if (repeated) return refuse("invalid_request", givenTwice(repeated));
      if (state !== null && state.length > 1024) return refuse("invalid_request", "state is longer than 1024 characters.");
      if (param(q, "response_type") !== "code") return refuse("unsupported_response_type", "Only response_type=code is supported.");
      const challenge = param(q, "code_challenge");
      if (param(q, "code_challenge_method") !== "S256" || !challenge || !PKCE_S256_CHALLENGE.test(challenge)) {
        return refuse("invalid_request", "PKCE is required: code_challenge (43 base64url characters) with code_challenge_method=S256.");
      }
      const requestedResource = param(q, "resource");
      if ("resource" in q && requestedResource !== resource) return refuse("invalid_target", `The only resource here is ${resource}.`);
      const scopes = (param(q, "scope") ?? "mcp:read").split(" ").filter(Boolean);
      const unknown = scopes.find((sc) => !(MCP_SCOPES as readonly string[]).includes(sc));
      if (unknown || scopes.length === 0) return refuse("invalid_scope", `Scopes are ${MCP_SCOPES.join(" and ")}.`);
      const sealed = signer.seal({ clientId: client.id, clientName: client.name, redirectUri, codeChallenge: challenge, scopes: [...new Set(scopes)], state, resource });
      res.redirect(302, `${config.webUrl}${CONSENT_PAGE_PATH}?request=${sealed}`);
    })().catch(next);
  };

  const token: RequestHandler = (req, res, next) => {
    (async () => {
      const b = req.body as unknown;
      const repeated = repeatedParam(b, TOKEN_PARAMS);
      if (repeated) throw new OAuthProtocolError("invalid_request", givenTwice(repeated));
      const grantType = param(b, "grant_type");
      let issued;
      if (grantType === "authorization_code") {
        const code = param(b, "code");
        if (!code) throw new OAuthProtocolError("invalid_request", "code is required.");
        issued = await oauth.exchangeCode({
          code,
          codeVerifier: param(b, "code_verifier"),
          redirectUri: param(b, "redirect_uri"),
          clientId: param(b, "client_id"),
          resource: param(b, "resource"),
        });
      } else if (grantType === "refresh_token") {
        const rt = param(b, "refresh_token");
        if (!rt) throw new OAuthProtocolError("invalid_request", "refresh_token is required.");
        // A public client has no secret: its client_id is what binds the token to it (RFC 6749 6).
        const clientId = param(b, "client_id");
        if (!clientId) throw new OAuthProtocolError("invalid_request", "client_id is required: a refresh names the client it was issued to.");
        issued = await oauth.refresh(rt, clientId, param(b, "resource"));
      } else {
        throw new OAuthProtocolError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.");
      }
      res.setHeader("Cache-Control", "no-store");
      res.setHeader("Pragma", "no-cache");
      res.status(200).json(issued);
    })().catch((err: unknown) => (err instanceof OAuthProtocolError ? oauthError(res, err) : next(err)));
  };

  return s.router(contract.oauth, {
    register: { middleware: [publicCors, register], handler: unreachable },
    // ts-rest types route middleware by the route's query; this one reads the raw query on purpose.
    authorize: { middleware: [authorize as never], handler: unreachable },
    token: { middleware: [publicCors, token], handler: unreachable },
    consentRequest: async ({ query, res }) => {
      const p = sessionOf(res);
      const request = signer.openOrRefuse(query.request, "query.request");
      // cappedScopes holds the role rule (PERMISSIONS approveOAuth): nothing granted, no approval.
      const granted = cappedScopes(request.scopes, p.role);
      return {
        status: 200,
        body: {
          client_id: request.clientId,
          client_name: request.clientName,
          redirect_uri: request.redirectUri,
          redirect_host: new URL(request.redirectUri).host,
          requested_scopes: MCP_SCOPES.filter((sc) => request.scopes.includes(sc)).map((scope) => ({ scope, description: MCP_SCOPE_TEXT[scope] })),
          granted_scopes: granted,
          role: p.role,
          may_approve: granted.length > 0,
          expires_at: new Date(request.expiresAt).toISOString(),
        },
      };
    },
    decideConsent: async ({ body, res }) => {
      // The session check refused anything not provably from the dashboard's origin, and the body
      // is read as JSON only (forms are read on the token endpoint alone).
      const p = sessionOf(res);
      const request = signer.openOrRefuse(body.request, "body.request");
      if (body.decision === "deny") {
        return { status: 200, body: { redirect_to: clientRedirect(request, issuer, { error: "access_denied", error_description: "The member denied the request." }) } };
      }
      const scopes = cappedScopes(request.scopes, p.role);
      if (scopes.length === 0) {
        throw new ApiError("forbidden", `Your role (${p.role}) cannot approve tool access; an owner, admin or developer can.`);
      }
      const code = await oauth.approve({
        workspaceId: p.workspaceId,
        userId: p.userId,
        clientId: request.clientId,
        clientName: request.clientName,
        redirectUri: request.redirectUri,
        scopes,
        resource: request.resource,
        codeChallenge: request.codeChallenge,
      });
      return { status: 200, body: { redirect_to: clientRedirect(request, issuer, { code }) } };
    },
    listAuthorizations: async ({ res }) => {
      const p = sessionOf(res);
      return { status: 200, body: { data: await oauth.listGrants(p.workspaceId, p.userId) } };
    },
    revokeAuthorization: async ({ params, res }) => {
      const p = sessionOf(res);
      if (!(await oauth.revokeGrant(p.workspaceId, p.userId, params.id))) throw ApiError.notFound("authorization");
      return { status: 204, body: undefined };
    },
  });
}
