// AI assistance (docs/ai.md). Bodies are `.strict()` (the policy says "no extra properties";
// unknown fields are rejected everywhere).
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionParams, ConnectionRef, IdParams, MAX_SAFE_INT, NoBody, Timestamp, list, page, problems, queryInteger, type RouteMetadata, chars } from "./common.js";

const c = initContract();

export const AiProvider = z.enum(["vendorone_compatible", "vendortwo"]);
export type AiProvider = z.infer<typeof AiProvider>;

export const AiMode = z.enum(["draft", "auto"]);
export type AiMode = z.infer<typeof AiMode>;

const micros = z.number().int().min(0).max(MAX_SAFE_INT);

export const CreateAiCredentialBody = z
  .object({
    provider: AiProvider,
    label: chars(1, 80),
    api_key: chars(8, 8192).describe("Stored encrypted; never returned"),
    base_url: z.string().url().optional(),
  })
  .strict();
export type CreateAiCredentialBody = z.infer<typeof CreateAiCredentialBody>;

export const AiPolicyBody = z
  .object({
    credential_id: z.string().uuid(),
    enabled: z.boolean(),
    mode: AiMode,
    model: chars(1, 120),
    system_instruction: chars(1, 4000),
    max_context_bytes: z.number().int().min(256).max(32768).default(8192),
    max_output_tokens: z.number().int().min(32).max(2000).default(300),
    monthly_cost_limit_micros: micros.nullable().default(null),
    input_cost_micros_per_million: micros.default(0),
    output_cost_micros_per_million: micros.default(0),
  })
  .strict();
export type AiPolicyBody = z.infer<typeof AiPolicyBody>;
/** What a caller may send (defaults make fields optional). */
export type AiPolicyInput = z.input<typeof AiPolicyBody>;

export const AiCredential = z.object({
  id: z.string().uuid(),
  provider: AiProvider,
  label: z.string(),
  base_url: z.string().nullable(),
  fingerprint: z.string().describe("The key's last four characters, like `…3xYz`"),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable().describe("When a run last called the vendor with it; null: never"),
});
export type AiCredential = z.infer<typeof AiCredential>;

export const AiCredentialList = list(AiCredential);
export type AiCredentialList = z.infer<typeof AiCredentialList>;

export const AiPolicy = z.object({
  connection: z.string(),
  credential_id: z.string().uuid(),
  enabled: z.boolean(),
  mode: AiMode,
  model: z.string(),
  system_instruction: z.string(),
  max_context_bytes: z.number().int(),
  max_output_tokens: z.number().int(),
  monthly_cost_limit_micros: z.number().int().nullable(),
  input_cost_micros_per_million: z.number().int(),
  output_cost_micros_per_million: z.number().int(),
  updated_at: Timestamp,
});
export type AiPolicy = z.infer<typeof AiPolicy>;

export const AiPolicyList = list(AiPolicy);
export type AiPolicyList = z.infer<typeof AiPolicyList>;

export const AiRunOutcome = z.enum(["drafted", "replied", "cost_limit_reached", "rate_limited", "human_active", "credential_missing", "vendor_error"]);
export type AiRunOutcome = z.infer<typeof AiRunOutcome>;

// Prompt hashes, usage, cost and outcome only: never prompt or completion text (docs/ai.md).
export const AiRun = z.object({
  id: z.string().describe("Identifier with prefix `airun_`"),
  connection: z.string(),
  message_id: z.string().describe("The inbound message that started the run"),
  mode: AiMode,
  model: z.string(),
  prompt_sha256: z.string().nullable().describe("Hex SHA-256 of the exact request body sent to the vendor; null when no request was sent"),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cost_micros: z.number().int(),
  latency_ms: z.number().int().nullable().describe("Time the vendor took to answer; null when it was not called"),
  outcome: AiRunOutcome,
  error: z.string().nullable().describe("A code (e.g. `vendor_timeout`, `vendor_rate_limited`, `vendor_unavailable`), never vendor text"),
  created_at: Timestamp,
});
export type AiRun = z.infer<typeof AiRun>;

export const ListAiRunsQuery = z
  .object({
    limit: queryInteger(1, 100).default(25),
    cursor: chars(0, 200).optional(),
    connection: ConnectionRef.optional(),
  })
  .strict();
export type ListAiRunsQuery = z.infer<typeof ListAiRunsQuery>;

export const AiRunList = page(AiRun);
export type AiRunList = z.infer<typeof AiRunList>;

const read = { security: { auth: "key_or_session", scope: "ai:read" }, tag: "AI" } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "ai:write" }, tag: "AI" } satisfies RouteMetadata;

export const ai = c.router(
  {
    createCredential: {
      method: "POST",
      path: "/v1/ai/credentials",
      summary: "Store a model-vendor credential",
      description:
        "The key is stored encrypted and never returned; responses show a fingerprint. A `base_url` goes through the outbound address policy (https, no private addresses unless the operator allows them).",
      body: CreateAiCredentialBody,
      responses: { 201: AiCredential, ...problems(400, 401, 402, 403, 429) },
      metadata: { ...write, feature: "ai" } satisfies RouteMetadata,
    },
    listCredentials: {
      method: "GET",
      path: "/v1/ai/credentials",
      summary: "List model-vendor credentials",
      responses: { 200: AiCredentialList, ...problems(401, 403, 429) },
      metadata: read,
    },
    deleteCredential: {
      method: "DELETE",
      path: "/v1/ai/credentials/:id",
      summary: "Delete a model-vendor credential",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 429) },
      metadata: write,
    },
    setPolicy: {
      method: "PUT",
      path: "/v1/ai/policies/:connection",
      summary: "Set the AI policy of a connection",
      description: "Replaces the whole policy; omitted optional fields take their defaults. Without a policy AI is off.",
      pathParams: ConnectionParams,
      body: AiPolicyBody,
      responses: { 200: AiPolicy, ...problems(400, 401, 402, 403, 404, 429) },
      metadata: { ...write, feature: "ai" } satisfies RouteMetadata,
    },
    getPolicy: {
      method: "GET",
      path: "/v1/ai/policies/:connection",
      summary: "Retrieve the AI policy of a connection",
      description: "404 when no policy is set (AI is off for that connection).",
      pathParams: ConnectionParams,
      responses: { 200: AiPolicy, ...problems(400, 401, 403, 404, 429) },
      metadata: read,
    },
    listPolicies: {
      method: "GET",
      path: "/v1/ai/policies",
      summary: "List the AI policies (extension)",
      description: "Every live connection's policy, by connection slug; a connection without one is not listed (AI is off for it).",
      responses: { 200: AiPolicyList, ...problems(401, 403, 429) },
      metadata: read,
    },
    listRuns: {
      method: "GET",
      path: "/v1/ai/runs",
      summary: "List recent AI runs",
      description: "Newest first, in cursor pages. Prompt hashes, token usage, cost, latency and outcome; never prompt or completion text.",
      query: ListAiRunsQuery,
      responses: { 200: AiRunList, ...problems(400, 401, 403, 429) },
      metadata: read,
    },
  },
  { strictStatusCodes: true },
);
