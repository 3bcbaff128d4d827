// Workspace, usage and API keys (docs/decisions.md, "Identity"). Bodies and queries are `.strict()`: unknown
// fields are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { IdParams, IssuableScope, PLAN_FEATURES, Role, ScopeSchema, Timestamp, list, problems, queryInteger, type RouteMetadata, chars } from "./common.js";

const c = initContract();

export const Environment = z.enum(["live", "test"]);
export type Environment = z.infer<typeof Environment>;

export const IssueApiKeyBody = z
  .object({
    name: chars(1, 80),
    scopes: z.array(IssuableScope).min(1),
    environment: Environment.default("live"),
  })
  .strict();
export type IssueApiKeyBody = z.infer<typeof IssueApiKeyBody>;

// The spec gives the range only; 30 days is our default, the same as the export's.
export const UsageQuery = z.object({ days: queryInteger(1, 365).default(30) }).strict();
export type UsageQuery = z.infer<typeof UsageQuery>;

export const Whoami = z.object({
  principal: z.object({
    type: z.literal("api_key"),
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe("The key's visible prefix, e.g. `svc_live_AbC1`"),
    environment: Environment,
  }),
  scopes: z.array(ScopeSchema).describe("Effective scopes: the key's own, within what its issuer's role may grant"),
  workspace: z.object({ id: z.string(), name: z.string(), plan: z.string().describe("Plan id, e.g. `pro`") }),
});
export type Whoami = z.infer<typeof Whoami>;

export const PlanFeatures = z.object(
  Object.fromEntries(PLAN_FEATURES.map((f) => [f, z.boolean()])) as Record<(typeof PLAN_FEATURES)[number], z.ZodBoolean>,
);
export type PlanFeatures = z.infer<typeof PlanFeatures>;

export const Plan = z.object({
  id: z.string(),
  name: z.string(),
  limits: z.object({
    connections: z.number().int().nullable().describe("null = unlimited"),
    messages_per_month: z.number().int().nullable().describe("null = unlimited"),
    features: PlanFeatures,
  }),
});
export type Plan = z.infer<typeof Plan>;

export const WorkspaceOverview = z.object({
  workspace: z.object({ id: z.string(), name: z.string(), created_at: Timestamp }),
  role: Role.describe("The caller's role"),
  plan: Plan,
  usage: z.object({
    connections: z.number().int().describe("Live connections (soft-deleted ones do not count)"),
    messages_this_month: z.number().int(),
  }),
});
export type WorkspaceOverview = z.infer<typeof WorkspaceOverview>;

const Counts = { messages_outbound: z.number().int(), messages_inbound: z.number().int() };

export const Usage = z.object({
  days: z.number().int(),
  from: z.string().describe("First day included (YYYY-MM-DD, UTC)"),
  to: z.string().describe("Last day included (YYYY-MM-DD, UTC)"),
  totals: z.object(Counts),
  daily: z.array(z.object({ date: z.string().describe("YYYY-MM-DD, UTC"), ...Counts })),
});
export type Usage = z.infer<typeof Usage>;

export const ApiKey = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  environment: Environment,
  scopes: z.array(ScopeSchema),
  created_by: z.string().describe("User id of the issuing member"),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
});
export type ApiKey = z.infer<typeof ApiKey>;

export const ApiKeyWithSecret = ApiKey.extend({
  key: z.string().describe("The plaintext key (`svc_live_…` / `svc_test_…`); returned only here, never again"),
});
export type ApiKeyWithSecret = z.infer<typeof ApiKeyWithSecret>;

export const ApiKeyList = list(ApiKey);
export type ApiKeyList = z.infer<typeof ApiKeyList>;

const session = { security: { auth: "session" }, tag: "Workspace" } satisfies RouteMetadata;

export const workspace = c.router(
  {
    whoami: {
      method: "GET",
      path: "/v1/whoami",
      summary: "Identify the calling API key",
      description: "Any API key, whatever its scopes.",
      responses: { 200: Whoami, ...problems(401, 429) },
      metadata: { security: { auth: "key" }, tag: "Workspace" } satisfies RouteMetadata,
    },
    get: {
      method: "GET",
      path: "/v1/workspace",
      summary: "Workspace, caller role, plan and usage against it",
      responses: { 200: WorkspaceOverview, ...problems(401, 429) },
      metadata: session,
    },
    usage: {
      method: "GET",
      path: "/v1/usage",
      summary: "Aggregated message counts",
      description: "Counts only, per UTC day, over the last `days` days (default 30).",
      query: UsageQuery,
      responses: { 200: Usage, ...problems(400, 401, 429) },
      metadata: session,
    },
    createApiKey: {
      method: "POST",
      path: "/v1/api-keys",
      summary: "Issue an API key",
      description: "The plaintext `key` is in this response only. 403 when the caller's role cannot grant a requested scope.",
      body: IssueApiKeyBody,
      responses: { 201: ApiKeyWithSecret, ...problems(400, 401, 403, 429) },
      metadata: session,
    },
    listApiKeys: {
      method: "GET",
      path: "/v1/api-keys",
      summary: "List API keys",
      description: "Metadata and prefixes, never keys.",
      responses: { 200: ApiKeyList, ...problems(401, 403, 429) },
      metadata: session,
    },
    revokeApiKey: {
      method: "POST",
      path: "/v1/api-keys/:id/revoke",
      summary: "Revoke an API key",
      description: "Effective immediately.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 200: ApiKey, ...problems(400, 401, 403, 404, 429) },
      metadata: session,
    },
    rotateApiKey: {
      method: "POST",
      path: "/v1/api-keys/:id/rotate",
      summary: "Rotate an API key",
      description: "Issues a new key with the same name, scopes and environment and revokes the old one. The new `key` is in this response only.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 200: ApiKeyWithSecret, ...problems(400, 401, 403, 404, 429) },
      metadata: session,
    },
  },
  { strictStatusCodes: true },
);
