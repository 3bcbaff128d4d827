// OAuth 2.1 authorization server for the tool endpoint (docs/mcp.md; RFC 6749, 7591, 7636,
// 8707). Unlike the rest of the API these inputs are NOT strict: RFC 6749 (3.1, 3.2) says unknown
// request parameters MUST be ignored and RFC 7591 allows extra client metadata. Errors of the
// register and token endpoints use the RFC 6749 shape `{error, error_description}`, not Problem.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { NoBody, problems, Role, Timestamp, type RouteMetadata, type Scope, chars } from "./common.js";

const c = initContract();

/** RFC 6749 5.2 / RFC 7591 3.2.2 error response (application/json). */
export const OAuthError = z.object({
  error: z
    .string()
    .describe(
      "invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope, invalid_target, invalid_redirect_uri or invalid_client_metadata",
    ),
  error_description: z.string(),
});
export type OAuthError = z.infer<typeof OAuthError>;

// RFC 7636 4.1: 43-128 characters of the unreserved set; an S256 challenge is 43 base64url characters.
const Pkce = chars(43, 128).regex(/^[A-Za-z0-9._~-]+$/);

export const RegisterClientBody = z
  .object({
    redirect_uris: z.array(chars().url().max(2048)).min(1).describe("Exact-match redirects: https, or http on a loopback address"),
    client_name: chars(1, 200).optional(),
    token_endpoint_auth_method: z.literal("none").optional().describe("Public clients only; no client secret is issued"),
    grant_types: z.array(z.string()).optional(),
    response_types: z.array(z.string()).optional(),
  })
  .passthrough();
export type RegisterClientBody = z.infer<typeof RegisterClientBody>;

export const RegisteredClient = z.object({
  client_id: z.string(),
  client_id_issued_at: z.number().int().describe("Unix seconds"),
  client_name: z.string().optional(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  token_endpoint_auth_method: z.literal("none"),
});
export type RegisteredClient = z.infer<typeof RegisteredClient>;

export const AuthorizeQuery = z
  .object({
    response_type: z.literal("code"),
    client_id: chars(1, 2048).describe("A registered client's id, or the https URL of its Client ID Metadata Document"),
    redirect_uri: chars().url().max(2048),
    code_challenge: Pkce,
    code_challenge_method: z.literal("S256"),
    scope: chars(0, 200).optional().describe("Space-separated: mcp:read, mcp:write"),
    state: chars(0, 1024).optional(),
    resource: chars().url().max(2048).optional().describe("RFC 8707 resource indicator: {web_url}/v1/mcp"),
  })
  .passthrough();
export type AuthorizeQuery = z.infer<typeof AuthorizeQuery>;

// Form fields are strings; which ones a grant needs is checked by the server (answering an OAuth
// error, which a schema failure here could not).
export const TokenRequestBody = z
  .object({
    grant_type: z.enum(["authorization_code", "refresh_token"]),
    code: chars(0, 512).optional(),
    redirect_uri: chars(0, 2048).optional(),
    code_verifier: chars(0, 128).optional(),
    client_id: chars(0, 2048).optional(),
    refresh_token: chars(0, 512).optional(),
    resource: chars(0, 2048).optional(),
  })
  .passthrough();
export type TokenRequestBody = z.infer<typeof TokenRequestBody>;

export const TokenResponse = z.object({
  access_token: z.string().describe("`svc_mcp_at_…`, valid one hour, bound to the tool resource"),
  token_type: z.literal("Bearer"),
  expires_in: z.number().int().describe("Seconds (3600)"),
  refresh_token: z.string().describe("`svc_mcp_rt_…`, rotates on use, valid 30 days"),
  scope: z.string(),
});
export type TokenResponse = z.infer<typeof TokenResponse>;

export const AuthorizedClient = z.object({
  id: z.string().describe("Identifier of the authorization (prefix `oag_`)"),
  client_id: z.string(),
  client_name: z.string().nullable(),
  redirect_host: z.string().describe("Host the client's redirect URI points at"),
  scopes: z.array(z.string()),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
});
export type AuthorizedClient = z.infer<typeof AuthorizedClient>;

export const AuthorizedClientList = z.object({ data: z.array(AuthorizedClient) });

/** The dashboard page `/v1/oauth/authorize` sends the member to, with `?request=<sealed request>`. */
export const CONSENT_PAGE_PATH = "/oauth/consent";

/** The checked authorization request as `/v1/oauth/authorize` sealed it (signed, valid 10 minutes). */
const SealedRequest = chars(1, 16_384).describe("The `request` parameter of the consent page's address, as the authorization endpoint sealed it");

export const ConsentQuery = z.object({ request: SealedRequest }).strict();
export type ConsentQuery = z.infer<typeof ConsentQuery>;

/** The scopes of the tool endpoint, the only ones an OAuth client can ask for. */
export const MCP_SCOPES = ["mcp:read", "mcp:write"] as const satisfies readonly Scope[];
const McpScope = z.enum(MCP_SCOPES);

export const ConsentRequest = z.object({
  client_id: z.string().describe("The registered client's id, or the URL of its Client ID Metadata Document"),
  client_name: z.string().nullable(),
  redirect_uri: z.string().describe("Where the decision is sent"),
  redirect_host: z.string().describe("The host of redirect_uri, the place the member is sent back to"),
  requested_scopes: z.array(z.object({ scope: McpScope, description: z.string().describe("What the scope lets the client do, in plain words") })),
  granted_scopes: z.array(McpScope).describe("What approving grants: the requested scopes the member's role allows (empty when the role may not approve)"),
  role: Role,
  may_approve: z.boolean().describe("Only owner, admin and developer may approve; anyone may deny"),
  expires_at: Timestamp.describe("The request must be decided before this instant"),
});
export type ConsentRequest = z.infer<typeof ConsentRequest>;

export const ConsentDecisionBody = z.object({ request: SealedRequest, decision: z.enum(["approve", "deny"]) }).strict();
export type ConsentDecisionBody = z.infer<typeof ConsentDecisionBody>;

export const ConsentDecision = z.object({
  redirect_to: z.string().describe("The client's redirect URI with `code` (approved) or `error=access_denied`, and `state` and `iss`: navigate to it"),
});
export type ConsentDecision = z.infer<typeof ConsentDecision>;

const meta = { security: { auth: "none" }, tag: "OAuth" } satisfies RouteMetadata;
const session = { security: { auth: "session" }, tag: "OAuth" } satisfies RouteMetadata;

export const oauth = c.router(
  {
    register: {
      method: "POST",
      path: "/v1/oauth/register",
      summary: "Register a public OAuth client (RFC 7591)",
      description: "Dynamic registration of a public client; no client secret is issued.",
      body: RegisterClientBody,
      responses: { 201: RegisteredClient, 400: OAuthError, ...problems(429) },
      metadata: meta,
    },
    authorize: {
      method: "GET",
      path: "/v1/oauth/authorize",
      summary: "Begin the authorization-code flow",
      description:
        "Redirects to the consent page, where a signed-in owner, admin or developer approves the scopes; the decision " +
        "redirects to `redirect_uri` with `code` or `error`. A bad client or redirect URI, or either given twice, is never " +
        "redirected to: 400. Any other error is redirected to `redirect_uri` only when a member has approved the client " +
        "with that URI; otherwise it is shown on an HTML page (400), never redirected (RFC 9700 4.11).",
      query: AuthorizeQuery,
      responses: { 302: NoBody, ...problems(400, 429) },
      metadata: meta,
    },
    token: {
      method: "POST",
      path: "/v1/oauth/token",
      summary: "Exchange a code or refresh token for tokens",
      description:
        "Authorization code with PKCE (S256), or a refresh token (rotated on every use) with the `client_id` it was issued to. " +
        "Codes are single use; a parameter given twice is `invalid_request`.",
      contentType: "application/x-www-form-urlencoded",
      body: TokenRequestBody,
      responses: { 200: TokenResponse, 400: OAuthError, ...problems(429) },
      metadata: meta,
    },
    consentRequest: {
      method: "GET",
      path: "/v1/oauth/consent",
      summary: "Read a pending authorization request (extension)",
      description:
        "What the consent page shows: the client, where the decision goes, the scopes asked for in plain words and the ones " +
        "the member's role caps them to. 400 when the request is altered or older than ten minutes. Session only.",
      query: ConsentQuery,
      responses: { 200: ConsentRequest, ...problems(400, 401, 403, 429) },
      metadata: session,
    },
    decideConsent: {
      method: "POST",
      path: "/v1/oauth/consent",
      summary: "Approve or deny a pending authorization request (extension)",
      description:
        "Answers the address the page navigates to: the client's redirect URI with a one-time `code` (approve) or " +
        "`error=access_denied` (deny), plus `state` and `iss`. JSON from the dashboard's own origin only; approving needs " +
        "an owner, admin or developer (403), and binds the grant to the signed-in member. Session only.",
      body: ConsentDecisionBody,
      responses: { 200: ConsentDecision, ...problems(400, 401, 403, 429) },
      metadata: session,
    },
    listAuthorizations: {
      method: "GET",
      path: "/v1/oauth/authorizations",
      summary: "Clients the signed-in member authorized (extension)",
      description: "Every client the member approved in this workspace that still holds tokens, with its last use. Session only.",
      responses: { 200: AuthorizedClientList, ...problems(401, 403, 429) },
      metadata: session,
    },
    revokeAuthorization: {
      method: "DELETE",
      path: "/v1/oauth/authorizations/:id",
      summary: "Revoke a client's authorization (extension)",
      description: "Ends every access and refresh token of this authorization at once. Session only; a member revokes their own.",
      pathParams: z.object({ id: chars(1, 64) }),
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(401, 403, 404, 429) },
      metadata: session,
    },
  },
  { strictStatusCodes: true },
);
