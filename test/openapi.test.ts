// The OpenAPI document: valid 3.1, committed copy up to date, and every endpoint of spec section 4.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { expect } from "chai";
import type { OpenAPIObject, OperationObject, ParameterObject, RequestBodyObject, ResponseObject, SchemaObject } from "openapi3-ts/oas31";
import { ERROR_CODES } from "../server/http/errors.js";
import { buildOpenApiDocument } from "../server/openapi/document.js";

// Spec section 4, every path under /v1, written out literally (4.1 through 4.10, 4.6b, 4.9).
const SPEC_OPERATIONS: [string, string][] = [
  // 4.1 Messages
  ["post", "/v1/messages/text"],
  ["get", "/v1/messages"],
  ["get", "/v1/messages/{id}"],
  ["post", "/v1/messages/{id}/cancel"],
  ["post", "/v1/messages/{id}/reschedule"],
  ["get", "/v1/messages/export"],
  ["get", "/v1/numbers/check"],
  // 4.2 Connections
  ["post", "/v1/connections"],
  ["get", "/v1/connections"],
  ["get", "/v1/connections/{connection}"],
  ["delete", "/v1/connections/{connection}"],
  ["post", "/v1/connections/{connection}/pair"],
  ["get", "/v1/connections/{connection}/qr/{grantId}"],
  ["post", "/v1/connections/{connection}/suspend"],
  ["post", "/v1/connections/{connection}/resume"],
  // 4.3 Schedules
  ["post", "/v1/schedules"],
  ["get", "/v1/schedules"],
  ["get", "/v1/schedules/{id}"],
  ["post", "/v1/schedules/{id}/pause"],
  ["post", "/v1/schedules/{id}/resume"],
  ["post", "/v1/schedules/{id}/cancel"],
  // 4.4 Webhook endpoints
  ["post", "/v1/webhook-endpoints"],
  ["get", "/v1/webhook-endpoints"],
  ["delete", "/v1/webhook-endpoints/{id}"],
  // 4.5 AI
  ["post", "/v1/ai/credentials"],
  ["get", "/v1/ai/credentials"],
  ["delete", "/v1/ai/credentials/{id}"],
  ["put", "/v1/ai/policies/{connection}"],
  ["get", "/v1/ai/policies/{connection}"],
  ["get", "/v1/ai/runs"],
  // 4.6 Workspace
  ["get", "/v1/whoami"],
  ["get", "/v1/workspace"],
  ["get", "/v1/usage"],
  ["post", "/v1/api-keys"],
  ["get", "/v1/api-keys"],
  ["post", "/v1/api-keys/{id}/revoke"],
  ["post", "/v1/api-keys/{id}/rotate"],
  // 4.7 Team
  ["get", "/v1/members"],
  ["post", "/v1/members/invitations"],
  ["delete", "/v1/members/invitations/{id}"],
  ["post", "/v1/members/accept"],
  ["patch", "/v1/members/{id}"],
  ["delete", "/v1/members/{id}"],
  // 4.8 Dashboard sign-in
  ["post", "/v1/auth/request-code"],
  ["post", "/v1/auth/verify"],
  ["get", "/v1/auth/session"],
  ["post", "/v1/auth/logout"],
  // 4.6b Tool endpoint
  ["post", "/v1/mcp"],
  ["get", "/v1/mcp/tools"],
  // 4.9 OAuth
  ["post", "/v1/oauth/register"],
  ["get", "/v1/oauth/authorize"],
  ["post", "/v1/oauth/token"],
  // 4.10 Operational (the /v1 ones)
  ["get", "/v1/openapi.json"],
  ["post", "/v1/provider/{providerName}/{token}"],
];

// Operations beyond the spec, each described as an extension in its summary (docs/webhooks.md).
const EXTENSION_OPERATIONS: [string, string][] = [
  ["get", "/v1/webhook-endpoints/{id}/deliveries"],
  ["post", "/v1/webhook-endpoints/{id}/deliveries/{deliveryId}/resend"],
  // The dashboard lists and revokes the assistants a member authorized (docs/mcp.md)
  ["get", "/v1/oauth/authorizations"],
  ["delete", "/v1/oauth/authorizations/{id}"],
  // The dashboard's consent page reads and decides a pending authorization request
  ["get", "/v1/oauth/consent"],
  ["post", "/v1/oauth/consent"],
  // The dashboard's live event monitor (server-sent events, outside the ts-rest contract)
  ["get", "/v1/events/stream"],
  // Keys with webhooks:read too, resumed after Last-Event-ID; and the event log read back from a cursor
  ["get", "/v1/events"],
  // The schedules page previews the next five runs before creating
  ["post", "/v1/schedules/preview"],
  // The AI policies section reads every policy at once instead of a 404 per connection without one
  ["get", "/v1/ai/policies"],
  // issue 19: a connection made on an engine the gateway does not run is moved to one it does
  ["patch", "/v1/connections/{connection}"],
  // issue 23: conversations (docs/conversations.md)
  ["get", "/v1/connections/{connection}/chats"],
  ["post", "/v1/messages/{id}/reply"],
  ["post", "/v1/messages/{id}/reactions"],
  ["post", "/v1/messages/{id}/edit"],
  ["post", "/v1/messages/{id}/revoke"],
  ["post", "/v1/messages/{id}/read"],
  ["post", "/v1/connections/{connection}/chats/{chat}/presence"],
  ["get", "/v1/messages/{id}/media"],
  ["post", "/v1/messages/poll"],
  // docs/engines.md: a proxy per connection
  ["put", "/v1/connections/{connection}/settings"],
  // issue 24: the groups of a connection's number (docs/groups.md)
  ["get", "/v1/connections/{connection}/groups"],
  ["post", "/v1/connections/{connection}/groups"],
  ["get", "/v1/connections/{connection}/groups/{group}"],
  ["patch", "/v1/connections/{connection}/groups/{group}"],
  ["post", "/v1/connections/{connection}/groups/{group}/participants"],
  ["post", "/v1/connections/{connection}/groups/{group}/leave"],
  ["get", "/v1/connections/{connection}/groups/{group}/invite"],
  ["post", "/v1/connections/{connection}/groups/{group}/invite"],
];

// Spec 4.10's routes outside /v1 and the discovery documents of 4.9 and 4.10.
const OPERATIONAL_OPERATIONS: [string, string][] = [
  ["get", "/healthz"],
  ["get", "/readyz"],
  ["get", "/metrics"],
  ["get", "/.well-known/api-catalog"],
  ["get", "/.well-known/oauth-authorization-server"],
  ["get", "/.well-known/oauth-protected-resource/v1/mcp"],
];

// RFC 6749 / RFC 7591 errors are `{error, error_description}` as application/json, not problems.
const OAUTH_ERRORS = new Set(["oauthRegister 400", "oauthToken 400"]);

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const;

function operations(doc: OpenAPIObject): { method: string; path: string; op: OperationObject }[] {
  const out: { method: string; path: string; op: OperationObject }[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) out.push({ method, path, op });
    }
  }
  return out;
}

describe("OpenAPI document", () => {
  const doc = buildOpenApiDocument();

  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as never);
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2));
    expect(result.valid).to.equal(true);
  });

  it("is committed up to date as openapi.json", () => {
    const file = fileURLToPath(new URL("../openapi.json", import.meta.url));
    const onDisk: unknown = JSON.parse(readFileSync(file, "utf8"));
    expect(onDisk, "openapi.json is stale: run `npm run openapi`").to.deep.equal(JSON.parse(JSON.stringify(doc)));
  });

  it("declares OpenAPI 3.1.0, API version 1.0.0 and an environment-independent server", () => {
    expect(doc.openapi).to.equal("3.1.0");
    expect(doc.info.version).to.equal("1.0.0");
    expect(doc.servers).to.deep.equal([{ url: "/" }]);
    expect(buildOpenApiDocument({ serverUrl: "https://api.example.com" }).servers).to.deep.equal([{ url: "https://api.example.com" }]);
  });

  it("has every /v1 endpoint of spec section 4, and nothing else but the named extensions", () => {
    const missing = SPEC_OPERATIONS.filter(([method, path]) => !doc.paths?.[path]?.[method as (typeof METHODS)[number]]);
    expect(missing, "missing operations").to.deep.equal([]);
    const documented = operations(doc).map(({ method, path }) => `${method} ${path}`);
    expect(documented).to.have.members([...SPEC_OPERATIONS, ...OPERATIONAL_OPERATIONS, ...EXTENSION_OPERATIONS].map(([m, p]) => `${m} ${p}`));
    for (const [method, path] of EXTENSION_OPERATIONS) {
      expect(doc.paths?.[path]?.[method as (typeof METHODS)[number]]?.summary, `${method} ${path}`).to.include("(extension)");
    }
  });

  it("gives every operation an operationId, tags, summary, responses and security", () => {
    const ids = new Set<string>();
    for (const { method, path, op } of operations(doc)) {
      const where = `${method} ${path}`;
      expect(op.operationId, where).to.be.a("string").and.match(/^[a-z][A-Za-z0-9]*$/);
      expect(ids.has(op.operationId!), `${where}: duplicate operationId`).to.equal(false);
      ids.add(op.operationId!);
      expect(op.tags, where).to.be.an("array").with.lengthOf(1);
      expect(doc.tags?.map((t) => t.name), `${where}: its tag is declared`).to.include(op.tags![0]);
      expect(op.summary, where).to.be.a("string").and.not.equal("");
      expect(Object.keys(op.responses ?? {}), where).to.not.be.empty;
      expect(op.security, where).to.be.an("array");
    }
  });

  it("answers errors as application/problem+json and successes as JSON (CSV for the export)", () => {
    for (const { method, path, op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses as Record<string, ResponseObject>)) {
        const where = `${method} ${path} ${status}`;
        const types = Object.keys(response.content ?? {});
        if (Number(status) >= 400) {
          expect(types, where).to.deep.equal(OAUTH_ERRORS.has(`${op.operationId} ${status}`) ? ["application/json"] : ["application/problem+json"]);
        } else if (status === "204" || status === "302" || (op.operationId === "mcpCall" && status === "202")) {
          expect(types, where).to.deep.equal([]);
        } else {
          const special: Record<string, string> = { messagesExport: "text/csv", conversationsMedia: "application/octet-stream", metrics: "text/plain", apiCatalog: "application/linkset+json", streamEvents: "text/event-stream" };
          expect(types, where).to.deep.equal([special[op.operationId!] ?? "application/json"]);
        }
        if (status === "429") expect(response.headers, where).to.have.property("Retry-After");
      }
    }
  });

  it("maps security from the route metadata", () => {
    const security = (method: string, path: string) => doc.paths?.[path]?.[method as "get"]?.security;
    expect(security("post", "/v1/messages/{id}/cancel")).to.deep.equal([{ apiKey: [] }]);
    expect(security("post", "/v1/messages/text")).to.deep.equal([{ apiKey: [] }, { sessionCookie: [] }]);
    expect(security("get", "/v1/workspace")).to.deep.equal([{ sessionCookie: [] }]);
    expect(security("post", "/v1/webhook-endpoints")).to.deep.equal([{ apiKey: [] }, { sessionCookie: [] }]);
    expect(security("post", "/v1/mcp")).to.deep.equal([{ apiKey: [] }, { oauth2: ["mcp:read"] }]);
    expect(security("post", "/v1/auth/verify")).to.deep.equal([]);
    expect(Object.keys(doc.components?.securitySchemes ?? {})).to.have.members(["apiKey", "sessionCookie", "oauth2", "metricsToken"]);
    expect(security("get", "/metrics")).to.deep.equal([{ metricsToken: [] }]);
    expect(security("get", "/healthz")).to.deep.equal([]);
  });

  it("keeps limits, integer types and content types through the conversion", () => {
    const list = doc.paths?.["/v1/messages"]?.get?.parameters as ParameterObject[];
    expect(list.find((p) => p.name === "limit")?.schema).to.deep.equal({ type: "integer", minimum: 1, maximum: 100, default: 25 });
    const exportParams = doc.paths?.["/v1/messages/export"]?.get?.parameters as ParameterObject[];
    expect(exportParams.find((p) => p.name === "days")?.schema).to.deep.equal({ type: "integer", minimum: 1, maximum: 365, default: 30 });
    const send = doc.paths?.["/v1/messages/text"]?.post;
    expect((send?.parameters as ParameterObject[]).map((p) => [p.name, p.in])).to.deep.equal([["Idempotency-Key", "header"]]);
    const token = doc.paths?.["/v1/oauth/token"]?.post?.requestBody;
    expect(Object.keys((token as { content: object }).content)).to.deep.equal(["application/x-www-form-urlencoded"]);
  });

  it("contains no OpenAPI 3.0 or draft-specific leftovers (nullable, $schema)", () => {
    const text = JSON.stringify(doc);
    expect(text).to.not.include('"nullable"');
    expect(text).to.not.include('"$schema"');
  });

  it("names every resource as a component schema and references it with $ref", () => {
    const schemas = doc.components?.schemas ?? {};
    const resources = ["Message", "MessageTimelineEntry", "Connection", "Schedule", "WebhookEndpoint", "WebhookDelivery", "ApiKey", "Member", "Invitation", "Workspace", "Usage", "AiCredential", "AiPolicy", "AiRun", "Whoami", "Problem"];
    expect(Object.keys(schemas)).to.include.members(resources);
    const ok = (method: "get" | "post", path: string, status: string) =>
      ((doc.paths?.[path]?.[method]?.responses as Record<string, ResponseObject>)[status]?.content?.["application/json"]?.schema as { $ref?: string }).$ref;
    expect(ok("get", "/v1/connections/{connection}", "200")).to.equal("#/components/schemas/Connection");
    expect(ok("get", "/v1/messages/{id}", "200")).to.equal("#/components/schemas/MessageWithTimeline");
    expect(ok("get", "/v1/workspace", "200")).to.equal("#/components/schemas/Workspace");
    expect(JSON.stringify(schemas.MessagePage)).to.include('"$ref":"#/components/schemas/Message"');
    expect(JSON.stringify(schemas.MessageWithTimeline)).to.include('"$ref":"#/components/schemas/MessageTimelineEntry"');
    // Every $ref resolves, and every component is used.
    const text = JSON.stringify(doc);
    const refs = new Set([...text.matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]!));
    expect([...refs].filter((r) => !(r in schemas))).to.deep.equal([]);
    expect(Object.keys(schemas).filter((name) => !refs.has(name))).to.deep.equal([]);
  });

  it("gives the problem code as an enum of exactly the server's codes", () => {
    const problem = doc.components?.schemas?.Problem as SchemaObject;
    expect(problem.properties?.code).to.deep.equal({ $ref: "#/components/schemas/ProblemCode" });
    expect((doc.components?.schemas?.ProblemCode as SchemaObject).enum).to.have.members(Object.keys(ERROR_CODES));
  });

  it("gives every operation a description and examples of its parameters, request and responses", () => {
    for (const { method, path, op } of operations(doc)) {
      const where = `${method} ${path}`;
      expect(op.description, where).to.be.a("string").with.length.above(20);
      expect(op.description!.startsWith(op.summary!), `${where}: a description, not the summary again`).to.equal(false);
      for (const p of (op.parameters ?? []) as ParameterObject[]) expect(p.example, `${where} parameter ${p.name}`).to.not.equal(undefined);
      for (const [type, media] of Object.entries((op.requestBody as RequestBodyObject | undefined)?.content ?? {})) {
        expect(media.example, `${where} request ${type}`).to.not.equal(undefined);
      }
      const responses = Object.entries(op.responses as Record<string, ResponseObject>);
      expect(responses.some(([, r]) => Object.values(r.content ?? {}).some((m) => m.example !== undefined)), `${where}: a response example`).to.equal(true);
      for (const [status, response] of responses) {
        for (const [type, media] of Object.entries(response.content ?? {})) expect(media.example, `${where} ${status} ${type}`).to.not.equal(undefined);
      }
    }
    const send = doc.paths?.["/v1/messages/text"]?.post;
    expect((send?.requestBody as RequestBodyObject).content["application/json"]?.example).to.include({ connection: "support", to: "+15550002222" });
    const notFound = (doc.paths?.["/v1/messages/{id}"]?.get?.responses as Record<string, ResponseObject>)["404"]?.content?.["application/problem+json"]?.example;
    expect(notFound).to.include({ status: 404, code: "not_found" });
  });

  it("declares the rate-limit, Retry-After, Idempotent-Replayed and X-Request-Id headers", () => {
    expect(Object.keys(doc.components?.headers ?? {})).to.have.members(["X-Request-Id", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Idempotent-Replayed"]);
    const send = doc.paths?.["/v1/messages/text"]?.post?.responses as Record<string, ResponseObject>;
    expect(Object.keys(send["202"]!.headers!)).to.have.members(["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Idempotent-Replayed"]);
    expect(Object.keys(send["429"]!.headers!)).to.include.members(["Retry-After", "RateLimit-Remaining"]);
    expect(Object.keys(send["409"]!.headers!)).to.include("Retry-After");
    // A session-only route has no per-key limit to report.
    const workspace = doc.paths?.["/v1/workspace"]?.get?.responses as Record<string, ResponseObject>;
    expect(Object.keys(workspace["200"]!.headers!)).to.deep.equal(["X-Request-Id"]);
  });

  it("accepts the development owner admin@localhost as the sign-in address", () => {
    const body = (doc.paths?.["/v1/auth/request-code"]?.post?.requestBody as RequestBodyObject).content["application/json"]!;
    const ref = (body.schema as { $ref: string }).$ref.split("/").pop()!;
    const email = (doc.components?.schemas?.[ref] as SchemaObject).properties?.email as SchemaObject;
    // `format: email` as validators implement it needs a dot in the host: the pattern says it all.
    expect(email.format).to.equal(undefined);
    expect(new RegExp(email.pattern!, "u").test("admin@localhost")).to.equal(true);
    expect(new RegExp(email.pattern!, "u").test("admin@")).to.equal(false);
    expect(body.example).to.deep.equal({ email: "admin@localhost" });
  });

  it("declares no 501: every operation is built", () => {
    const declaring = operations(doc).filter(({ op }) => "501" in (op.responses ?? {}) || op["x-not-implemented"] !== undefined);
    expect(declaring.map(({ op }) => op.operationId)).to.deep.equal([]);
  });
});
