// The routes served outside the ts-rest contract (server/ops/routes.ts, the OAuth discovery
// documents of docs/mcp.md, and the dashboard's event stream), described by hand: liveness,
// readiness, metrics, the discovery documents and a stream ts-rest cannot describe. They have no zod schema because nothing validates their input (they take
// none) and the SDK does not call them.
import type { OperationObject, PathsObject, ResponseObject, SchemaObject } from "openapi3-ts/oas31";

const REQUEST_ID = { $ref: "#/components/headers/X-Request-Id" };
const PROBLEM = { $ref: "#/components/schemas/Problem" };

function json(description: string, schema: SchemaObject, example: unknown, type = "application/json"): ResponseObject {
  return { description, headers: { "X-Request-Id": REQUEST_ID }, content: { [type]: { schema, example } } };
}

function problem(description: string, status: number, code: string, detail: string): ResponseObject {
  const example = { type: `https://docs.svc-gateway.dev/errors/${code}`, title: description, status, detail, code, request_id: "req_01JD3Q8W2Z6K9V5N1R4T7Y0B2C" };
  return { description, headers: { "X-Request-Id": REQUEST_ID }, content: { "application/problem+json": { schema: PROBLEM, example } } };
}

function get(operationId: string, summary: string, description: string, responses: Record<string, ResponseObject>, extra: Partial<OperationObject> = {}): { get: OperationObject } {
  return { get: { operationId, summary, description, tags: ["Operational"], security: [], responses, ...extra } };
}

const status = (value: string): SchemaObject => ({ type: "object", properties: { status: { type: "string", const: value } }, required: ["status"] });

const links: SchemaObject = {
  type: "array",
  items: { type: "object", properties: { href: { type: "string", format: "uri" }, type: { type: "string" } }, required: ["href"] },
};

const stringList: SchemaObject = { type: "array", items: { type: "string" } };

export const OPERATIONAL_PATHS: PathsObject = {
  "/v1/events/stream": get(
    "streamEvents",
    "Live event stream (extension)",
    "The workspace's events as they are recorded, as server-sent events (`text/event-stream`): one message per event, its `id` the event id and its `data` the payload webhooks deliver (whose `type` names the event). " +
      "With `Last-Event-ID` (an event id of the workspace; browsers send it when they reconnect) the stream first sends the events recorded after that one, then goes on live; without it, or with an id no longer kept, it starts live. " +
      "A comment line every 15 s keeps the connection open; the stream ends when the session ends or the key is revoked. The dashboard's session, or an API key with webhooks:read.",
    {
      200: {
        description: "Server-sent events of the workspace",
        headers: { "X-Request-Id": REQUEST_ID },
        content: {
          "text/event-stream": {
            schema: { type: "string" },
            example:
              'id: evt_01JD3Q8W2Z6K9V5N1R4T7Y0B2C\ndata: {"id":"evt_01JD3Q8W2Z6K9V5N1R4T7Y0B2C","type":"message.queued","created_at":"2026-11-24T10:00:00.000Z","connection":"support","data":{}}\n\n',
          },
        },
      },
      401: problem("Not signed in, or the API key is unknown", 401, "unauthorized", "Sign in first: POST /v1/auth/request-code, then /v1/auth/verify."),
      403: problem("The key lacks webhooks:read, or no workspace membership", 403, "insufficient_scope", "This operation requires the scope webhooks:read."),
    },
    {
      tags: ["Webhooks"],
      security: [{ apiKey: [] }, { sessionCookie: [] }],
      "x-required-scope": "webhooks:read",
      parameters: [{ name: "Last-Event-ID", in: "header", required: false, description: "Resume after this event id", schema: { type: "string", maxLength: 64 } }],
    },
  ),
  "/healthz": get(
    "healthz",
    "Liveness",
    "Answers 200 while the process runs and its event loop turns; checks no dependency, so a restart policy never restarts the gateway for a database outage.",
    { 200: json("The process is alive", status("ok"), { status: "ok" }) },
  ),
  "/readyz": get(
    "readyz",
    "Readiness",
    "Answers 200 when the database and the job runner are available, else 503 naming what is not (for a load balancer).",
    {
      200: json("Ready", status("ready"), { status: "ready" }),
      503: problem("Service unavailable", 503, "unavailable", "Not ready: database unavailable."),
    },
  ),
  "/metrics": get(
    "metrics",
    "Prometheus metrics",
    "The text exposition format. Registered only when `METRICS_TOKEN` is set (otherwise 404); no label carries a workspace, connection, number or session name.",
    {
      200: {
        description: "Metrics in the Prometheus text format",
        headers: { "X-Request-Id": REQUEST_ID },
        content: { "text/plain": { schema: { type: "string" }, example: "# TYPE http_requests_total counter\nhttp_requests_total{method=\"GET\",status=\"200\"} 42\n" } },
      },
      401: {
        ...problem("Missing or wrong token", 401, "unauthorized", "Send the METRICS_TOKEN as a Bearer token."),
        headers: { "X-Request-Id": REQUEST_ID, "WWW-Authenticate": { description: "`Bearer realm=\"metrics\"`", schema: { type: "string" } } },
      },
    },
    { security: [{ metricsToken: [] }] },
  ),
  "/.well-known/api-catalog": get(
    "apiCatalog",
    "API catalog (RFC 9727)",
    "A linkset pointing at this document (`service-desc`) and at `/readyz` (`status`). Served at `WEB_URL`.",
    {
      200: json(
        "The API catalog",
        {
          type: "object",
          properties: {
            linkset: {
              type: "array",
              items: { type: "object", properties: { anchor: { type: "string", format: "uri" }, "service-desc": links, status: links }, required: ["anchor"] },
            },
          },
          required: ["linkset"],
        },
        {
          linkset: [
            {
              anchor: "https://gateway.example.com/v1",
              "service-desc": [{ href: "https://gateway.example.com/v1/openapi.json", type: "application/openapi+json;version=3.1" }],
              status: [{ href: "https://gateway.example.com/readyz", type: "application/json" }],
            },
          ],
        },
        "application/linkset+json",
      ),
    },
  ),
  "/.well-known/oauth-authorization-server": get(
    "oauthAuthorizationServerMetadata",
    "OAuth authorization server metadata (RFC 8414)",
    "Endpoints and capabilities of the OAuth 2.1 server of the tool endpoint. Served at `WEB_URL`.",
    {
      200: json(
        "Authorization server metadata",
        {
          type: "object",
          properties: {
            issuer: { type: "string", format: "uri" },
            authorization_endpoint: { type: "string", format: "uri" },
            token_endpoint: { type: "string", format: "uri" },
            registration_endpoint: { type: "string", format: "uri" },
            scopes_supported: stringList,
            response_types_supported: stringList,
            grant_types_supported: stringList,
            code_challenge_methods_supported: stringList,
            token_endpoint_auth_methods_supported: stringList,
          },
          required: ["issuer", "authorization_endpoint", "token_endpoint", "response_types_supported"],
        },
        {
          issuer: "https://gateway.example.com",
          authorization_endpoint: "https://gateway.example.com/v1/oauth/authorize",
          token_endpoint: "https://gateway.example.com/v1/oauth/token",
          registration_endpoint: "https://gateway.example.com/v1/oauth/register",
          scopes_supported: ["mcp:read", "mcp:write"],
          response_types_supported: ["code"],
          grant_types_supported: ["authorization_code", "refresh_token"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["none"],
        },
      ),
    },
  ),
  "/.well-known/oauth-protected-resource/v1/mcp": get(
    "oauthProtectedResourceMetadata",
    "OAuth protected resource metadata (RFC 9728)",
    "Names the tool endpoint as a protected resource and its authorization server; a 401 from `/v1/mcp` points here. Served at `WEB_URL`.",
    {
      200: json(
        "Protected resource metadata",
        {
          type: "object",
          properties: {
            resource: { type: "string", format: "uri" },
            authorization_servers: { type: "array", items: { type: "string", format: "uri" } },
            scopes_supported: stringList,
            bearer_methods_supported: stringList,
          },
          required: ["resource", "authorization_servers"],
        },
        {
          resource: "https://gateway.example.com/v1/mcp",
          authorization_servers: ["https://gateway.example.com"],
          scopes_supported: ["mcp:read", "mcp:write"],
          bearer_methods_supported: ["header"],
        },
      ),
    },
  ),
};
