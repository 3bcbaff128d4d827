// Builds the OpenAPI 3.1.0 description of the API from the ts-rest contract.
//
// @ts-rest/open-api (3.52) walks the contract for us (paths with `{id}` templates, methods,
// summaries, operation ids from the router path) but converts schemas with @anatine/zod-openapi,
// which writes OpenAPI 3.0 (`nullable: true`), drops `c.otherResponse` bodies (the CSV export),
// puts every response under application/json, names header parameters in lower case and declares
// no security. So the operationMapper below rebuilds each operation's parameters, request body
// and responses from the route's zod schemas with zod-to-json-schema (draft 2019-09 output, which
// is valid OpenAPI 3.1 Schema Object vocabulary once `$schema` is dropped), and adds security,
// tags and headers from the route metadata.
import {
  ContractNoBody,
  extractZodObjectShape,
  isAppRouteOtherResponse,
  isZodObject,
  isZodType,
  type AppRoute,
} from "@ts-rest/core";
import { generateOpenApi } from "@ts-rest/open-api";
import type {
  HeaderObject,
  OpenAPIObject,
  OperationObject,
  ParameterLocation,
  ParameterObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SecurityRequirementObject,
} from "openapi3-ts/oas31";
import { ZodOptional, type z } from "zod";
import { contract, NoBody, Problem, type RouteAuth, type RouteMetadata } from "../../contract/index.js";
import { OPERATION_DESCRIPTIONS } from "./descriptions.js";
import { exampleOf, problemExample, type Components } from "./examples.js";
import { OPERATIONAL_PATHS } from "./operational.js";
import { SchemaRegistry } from "./schemas.js";

export const OPENAPI_VERSION = "3.1.0";
export const API_VERSION = "1.0.0";

const TAGS: { name: string; description: string }[] = [
  { name: "Messages", description: "Send, list, cancel, reschedule and export messages; check numbers." },
  { name: "Conversations", description: "Chats, replies, reactions, edits, revokes, read marks, typing, media and polls." },
  { name: "Groups", description: "The groups of a connection: members and roles, settings, invite links." },
  { name: "Connections", description: "Messaging numbers (by slug) and their pairing lifecycle." },
  { name: "Schedules", description: "Recurring sends in an IANA timezone." },
  { name: "Webhooks", description: "Endpoints receiving signed events (HMAC-SHA256, `Svc-Signature`)." },
  { name: "AI", description: "Per-connection AI assistance: vendor credentials, policies, runs." },
  { name: "Workspace", description: "The calling key, the workspace, its plan and usage, API keys." },
  { name: "Team", description: "Members and invitations." },
  { name: "Auth", description: "Dashboard sign-in by e-mailed code; sets the `svc_session` cookie." },
  { name: "OAuth", description: "OAuth 2.1 authorization server for the tool endpoint." },
  { name: "MCP", description: "Hosted Model Context Protocol tool endpoint." },
  { name: "Operational", description: "Liveness, readiness, metrics, discovery documents, this document and the transport callback." },
];

const DESCRIPTION = [
  "Self-hostable messaging gateway: a durable REST API for sending, scheduling and receiving messages",
  "over a linked-device session, with signed webhooks and a Model Context Protocol tool endpoint.",
  "",
  "Authentication: `Authorization: Bearer svc_live_…` (or `svc_test_…`) API keys with explicit scopes;",
  "workspace, key and team management use the dashboard session cookie `svc_session`.",
  "",
  "Errors are `application/problem+json` (RFC 9457) with a stable `code` and a `request_id`;",
  "every response carries `X-Request-Id`. 202 on send means stored and queued, not delivered.",
  "Lists are cursor-paginated, newest first. Request bodies reject unknown fields.",
].join("\n");

// ---- operations ----

const PROBLEM_REF: ReferenceObject = { $ref: "#/components/schemas/Problem" };
const headerRef = (name: string): ReferenceObject => ({ $ref: `#/components/headers/${name}` });
const RATE_LIMIT_HEADERS = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"] as const;

const HEADERS: Record<string, HeaderObject> = {
  "X-Request-Id": { description: "Identifier of this request, also in every problem's `request_id`", schema: { type: "string" }, example: "req_01JD3Q8W2Z6K9V5N1R4T7Y0B2C" },
  "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer", minimum: 0 }, example: 12 },
  "RateLimit-Limit": { description: "Requests this credential (an API key, or a member's dashboard session on a key's route) may make in the current window", schema: { type: "integer", minimum: 0 }, example: 600 },
  "RateLimit-Remaining": { description: "Requests left in the current window", schema: { type: "integer", minimum: 0 }, example: 599 },
  "RateLimit-Reset": { description: "Seconds until the window resets", schema: { type: "integer", minimum: 0 }, example: 60 },
  "Idempotent-Replayed": { description: "`true` when this is the stored response of an earlier send with the same Idempotency-Key", schema: { type: "string", enum: ["true"] }, example: "true" },
};

const HEADER_NAMES: Record<string, string> = { "idempotency-key": "Idempotency-Key" };
const HEADER_DESCRIPTIONS: Record<string, string> = {
  "Idempotency-Key":
    "1-255 printable ASCII characters, one per logical send, remembered for 24 hours. A replay with the same body " +
    "returns the original response (`Idempotent-Replayed: true`); while the first is in flight: 409 with `Retry-After`; " +
    "with a different body: 422. Without it the send is accepted but not deduplicated.",
};

const STATUS_DESCRIPTIONS: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No content",
  302: "Redirect (see `Location`)",
  400: "The request was rejected: validation failed (`errors` lists each field) or the input is not acceptable",
  401: "Credential absent, malformed, revoked or expired, or not signed in",
  402: "The workspace's plan does not include this; the problem names the cheapest plan that does",
  403: "Forbidden: the API key lacks the scope, or the caller's role does not allow this",
  404: "Not found",
  409: "Conflict with the current state of the resource",
  422: "Idempotency-Key reused with a different body",
  429: "Rate limit or quota exceeded; retry after `Retry-After` seconds",
  503: "No transport configured",
};

// Headers particular to one operation's response, keyed by operationId and status.
const EXTRA_HEADERS: Record<string, Record<number, Record<string, HeaderObject | ReferenceObject>>> = {
  messagesSend: {
    202: { "Idempotent-Replayed": headerRef("Idempotent-Replayed") },
    409: { "Retry-After": headerRef("Retry-After") },
  },
  authVerify: { 200: { "Set-Cookie": { description: "The HttpOnly `svc_session` cookie", schema: { type: "string" } } } },
  authLogout: { 204: { "Set-Cookie": { description: "Clears the `svc_session` cookie", schema: { type: "string" } } } },
  oauthAuthorize: { 302: { Location: { description: "The consent page, or `redirect_uri` with `code` or `error`", schema: { type: "string", format: "uri" } } } },
  mcpCall: {
    401: { "WWW-Authenticate": { description: "Bearer challenge with `resource_metadata` (the protected-resource metadata URL)", schema: { type: "string" } } },
  },
};

function securityOf(auth: RouteAuth): SecurityRequirementObject[] {
  switch (auth.auth) {
    case "none":
      return [];
    case "key":
      return [{ apiKey: [] }];
    case "session":
      return [{ sessionCookie: [] }];
    case "key_or_session":
      return [{ apiKey: [] }, { sessionCookie: [] }];
    case "mcp":
      return [{ apiKey: [] }, { oauth2: [auth.scope] }];
  }
}

function parametersOf(route: AppRoute, schemas: SchemaRegistry): ParameterObject[] {
  const out: ParameterObject[] = [];
  const groups: [ParameterLocation, unknown][] = [
    ["path", route.pathParams],
    ["header", route.headers],
    ["query", route.query],
  ];
  for (const [where, schema] of groups) {
    if (!isZodObject(schema)) continue;
    const shape = extractZodObjectShape(schema) as Record<string, z.ZodTypeAny>;
    for (const [key, field] of Object.entries(shape)) {
      // A parameter's optionality is `required`, not part of its schema (converted alone, an
      // optional becomes `anyOf: [{not: {}}, …]`).
      const inner = field instanceof ZodOptional ? (field.unwrap() as z.ZodTypeAny) : field;
      const { description = field.description, ...fieldSchema } = schemas.convert(inner) as { description?: string };
      const name = where === "header" ? (HEADER_NAMES[key] ?? key) : key;
      const text = description ?? HEADER_DESCRIPTIONS[name];
      out.push({
        name,
        in: where,
        ...(text ? { description: text } : {}),
        required: where === "path" || !field.isOptional(),
        schema: fieldSchema,
      });
    }
  }
  const declared = new Set(out.filter((p) => p.in === "path").map((p) => p.name));
  for (const [, name] of route.path.matchAll(/:(\w+)/g)) {
    if (!declared.has(name!)) throw new Error(`${route.method} ${route.path}: path parameter ${name} has no pathParams schema`);
  }
  return out;
}

function requestBodyOf(route: AppRoute, schemas: SchemaRegistry): RequestBodyObject | undefined {
  if (route.method === "GET" || !("body" in route) || !isZodType(route.body)) return undefined;
  const contentType = ("contentType" in route && route.contentType) || "application/json";
  return { required: true, content: { [contentType]: { schema: schemas.convert(route.body) } } };
}

function responsesOf(route: AppRoute, meta: RouteMetadata, operationId: string, schemas: SchemaRegistry): Record<string, ResponseObject> {
  const out: Record<string, ResponseObject> = {};
  const rateLimited = meta.security.auth !== "none" && meta.security.auth !== "session";
  for (const [status, response] of Object.entries(route.responses)) {
    const code = Number(status);
    let description = STATUS_DESCRIPTIONS[code] ?? status;
    if (code === 402 && meta.feature) description = `The workspace's plan does not include \`${meta.feature}\`; the problem names the cheapest plan that does`;
    const headers: Record<string, HeaderObject | ReferenceObject> = { "X-Request-Id": headerRef("X-Request-Id") };
    // API-key calls carry the key's rate-limit state on every answer past authentication.
    if (rateLimited && (code < 300 || code === 429)) for (const name of RATE_LIMIT_HEADERS) headers[name] = headerRef(name);
    if (code === 429) headers["Retry-After"] = headerRef("Retry-After");
    Object.assign(headers, EXTRA_HEADERS[operationId]?.[code]);

    let content: ResponseObject["content"];
    if (response === ContractNoBody || response === NoBody) {
      content = undefined;
    } else if (isAppRouteOtherResponse(response)) {
      content = { [response.contentType]: { schema: isZodType(response.body) ? schemas.convert(response.body) : {} } };
    } else if (response === Problem) {
      content = { "application/problem+json": { schema: PROBLEM_REF } };
    } else if (isZodType(response)) {
      if (response.description && code < 300) description = response.description;
      content = { "application/json": { schema: schemas.convert(response) } };
    }
    out[status] = { description, headers, ...(content ? { content } : {}) };
  }
  return out;
}

const camelCase = (dotted: string) =>
  dotted
    .split(".")
    .map((part, i) => (i === 0 ? part : part.charAt(0).toUpperCase() + part.slice(1)))
    .join("");

function mapOperation(generated: { operationId?: string }, route: AppRoute, seen: Set<string>, schemas: SchemaRegistry): OperationObject {
  const meta = route.metadata as RouteMetadata | undefined;
  if (!meta?.security || !meta.tag) throw new Error(`${route.method} ${route.path}: metadata.security and metadata.tag are required`);
  const operationId = camelCase(generated.operationId ?? "");
  if (!operationId || seen.has(operationId)) throw new Error(`${route.method} ${route.path}: missing or duplicate operationId ${operationId}`);
  seen.add(operationId);

  const scope = "scope" in meta.security ? meta.security.scope : undefined;
  const requestBody = requestBodyOf(route, schemas);
  // Without a description of its own an operation repeats its summary; test/openapi.test.ts
  // refuses that, so a new route gets one (on the route, or in descriptions.ts).
  const description = route.description ?? OPERATION_DESCRIPTIONS[operationId] ?? route.summary;
  const responses = responsesOf(route, meta, operationId, schemas);
  return {
    operationId,
    summary: route.summary,
    description,
    tags: [meta.tag],
    parameters: parametersOf(route, schemas),
    ...(requestBody ? { requestBody } : {}),
    responses,
    security: securityOf(meta.security),
    ...(scope ? { "x-required-scope": scope } : {}),
    ...(meta.feature ? { "x-plan-feature": meta.feature } : {}),
  };
}

// ---- examples ----

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

/** Fills in an example for every parameter, request body and response that has none. */
function addExamples(paths: OpenAPIObject["paths"], components: Components): void {
  for (const item of Object.values(paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      for (const p of (op.parameters ?? []) as ParameterObject[]) {
        if (p.example === undefined && p.schema) p.example = exampleOf(p.schema, components, true, p.name);
      }
      for (const media of Object.values((op.requestBody as RequestBodyObject | undefined)?.content ?? {})) {
        if (media.example === undefined && media.schema) media.example = exampleOf(media.schema, components, true);
      }
      for (const [status, response] of Object.entries(op.responses as Record<string, ResponseObject>)) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          if (media.example !== undefined || !media.schema) continue;
          media.example = type === "application/problem+json" ? problemExample(Number(status)) : exampleOf(media.schema, components, false);
        }
      }
    }
  }
}

// ---- document ----

export function buildOpenApiDocument(opts: { serverUrl?: string } = {}): OpenAPIObject {
  const info = {
    title: "svc-gateway API",
    version: API_VERSION,
    description: DESCRIPTION,
    contact: { name: "svc-gateway maintainers", url: "https://docs.svc-gateway.dev" },
    license: { name: "MIT", identifier: "MIT" },
  };
  const seen = new Set<string>();
  const schemas = new SchemaRegistry();
  const generated = generateOpenApi(
    contract,
    { info },
    {
      setOperationId: "concatenated-path",
      // ts-rest types the hook with openapi3-ts 2 (OpenAPI 3.0); the objects we return are 3.1.
      operationMapper: (operation, route) => mapOperation(operation, route, seen, schemas) as never,
    },
  );
  schemas.convert(Problem);
  const paths = { ...(generated.paths as OpenAPIObject["paths"]), ...structuredClone(OPERATIONAL_PATHS) };
  const components = schemas.components();
  addExamples(paths, components);

  return {
    openapi: OPENAPI_VERSION,
    info,
    servers: [{ url: opts.serverUrl ?? "/" }],
    tags: TAGS,
    paths,
    components: {
      schemas: components,
      headers: HEADERS,
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          description:
            "Workspace API key: `svc_live_…` (live) or `svc_test_…` (test), with an explicit scope set " +
            "(see each operation's `x-required-scope`). Issued from the dashboard; never embed in browser code.",
        },
        sessionCookie: {
          type: "apiKey",
          in: "cookie",
          name: "svc_session",
          description: "Dashboard session (HttpOnly), set by POST /v1/auth/verify. Never an agent credential.",
        },
        oauth2: {
          type: "oauth2",
          description: "OAuth 2.1 for the tool endpoint only: authorization code with PKCE S256, dynamic client registration at /v1/oauth/register. Access tokens `svc_mcp_at_…` last one hour.",
          flows: {
            authorizationCode: {
              authorizationUrl: "/v1/oauth/authorize",
              tokenUrl: "/v1/oauth/token",
              refreshUrl: "/v1/oauth/token",
              scopes: { "mcp:read": "Call read-only tools", "mcp:write": "Call mutating tools (preview, then confirm)" },
            },
          },
        },
        metricsToken: {
          type: "http",
          scheme: "bearer",
          description: "The `METRICS_TOKEN` setting (16 or more characters), for `GET /metrics` only.",
        },
      },
    },
  };
}
