// Examples for every request and response of the document, derived from the schemas so that they
// cannot disagree with them: a field gets a realistic value by its name (`to`, `connection`,
// `email`…) when that value satisfies the field's schema, else the simplest value that does.
// Request bodies show their required fields (plus the few optional ones that make a request
// meaningful, below); responses show every field.
import type { ReferenceObject, SchemaObject } from "openapi3-ts/oas31";
import { ERROR_CODES } from "../http/errors.js";

const NOW = "2026-01-15T09:30:00Z";
const ULID = "01JD3Q8W2Z6K9V5N1R4T7Y0B2C";

/** Realistic values by property (or parameter) name, used when they fit the schema. */
const BY_NAME: Record<string, unknown> = {
  connection: "support",
  slug: "support",
  providerName: "sandbox",
  to: "+15550002222",
  from: "+15550001111",
  phone: "+15550001111",
  group: "+15550003333",
  body: "Your order has shipped",
  email: "admin@localhost",
  name: "Support line",
  title: "Head office",
  url: "https://hooks.example.com/svc",
  timezone: "Europe/Paris",
  code: "123456",
  description: "Order notifications",
  metadata: { order_id: "42" },
  context: { customer_tier: "gold" },
  latitude: 48.8566,
  longitude: 2.3522,
  hour: 9,
  minute: 30,
  day_of_month: 1,
  days_of_week: [1, 3, 5],
  limit: 25,
  days: 30,
  key: "svc_live_3kT9qYp2vXn8RwL5mZc7HbJd",
  prefix: "svc_live_3kT9",
  secret: "whsec_9bF2kLmQ7xR4tVz8NcP1sYw6",
  token: "cbt_7Hq2LxP9wRt4VzN8kMc3",
  "Idempotency-Key": "order-42",
  cursor: "eyJ0IjoiMjAyNi0wMS0xNVQwOTozMDowMFoiLCJpZCI6Im1zZ18wMUpEM1E4VyJ9",
  event_id: "evt_sandbox_0001",
  provider_message_id: "3EB0C431C2A1F6D7E8B9",
  created_by: "usr_" + ULID,
  message: { connection: "support", to: "+15550002222", body: "Your weekly report is ready" },
  error: { code: "recipient_unreachable", message: "The number is not on the network." },
  redirect_uris: ["https://app.example.com/oauth/callback"],
  redirect_uri: "https://app.example.com/oauth/callback",
  client_name: "Example assistant",
  mimetype: "image/jpeg",
  filename: "receipt.jpg",
  grantId: "grt_" + ULID,
  deliveryId: "del_" + ULID,
  request_id: "req_" + ULID,
  at: NOW,
  local: "2026-01-15T10:30:00+01:00",
};

/** The identifier prefix of each resource (server/ids.ts), for its `id` field. */
const ID_PREFIXES: Record<string, string> = {
  Workspace: "wsp",
  Member: "usr",
  Invitation: "inv",
  ApiKey: "key",
  ApiKeyWithSecret: "key",
  Message: "msg",
  MessageWithTimeline: "msg",
  Connection: "con",
  ConnectionCreated: "con",
  Schedule: "sch",
  WebhookEndpoint: "whe",
  WebhookEndpointCreated: "whe",
  WebhookDelivery: "del",
  AiRun: "run",
};

/** Optional request fields an example shows although they are optional. */
const SHOWN_OPTIONAL = new Set(["body", "name", "description", "metadata"]);

/** The simplest value of the few patterns whose name-based value does not apply. */
function fitsString(schema: SchemaObject, value: unknown): value is string {
  if (typeof value !== "string") return false;
  if (schema.minLength !== undefined && value.length < schema.minLength) return false;
  if (schema.maxLength !== undefined && value.length > schema.maxLength) return false;
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) return false;
  if (schema.enum && !schema.enum.includes(value)) return false;
  return true;
}

/** Whether a named object value has every field the object schema requires, and only fields it names. */
function fitsObject(schema: SchemaObject, value: unknown): boolean {
  if (schema.type !== "object" || typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return (schema.required ?? []).every((k) => keys.includes(k)) && (!schema.properties || keys.every((k) => k in schema.properties!));
}

function idPrefix(schema: SchemaObject): string | undefined {
  return /Identifier with prefix `(\w+)_`/.exec(schema.description ?? "")?.[1];
}

function stringExample(schema: SchemaObject, name: string | undefined, component: string | undefined): string {
  const prefix = idPrefix(schema) ?? (name === "id" && component ? ID_PREFIXES[component] : undefined);
  const candidates: unknown[] = [
    name !== undefined ? BY_NAME[name] : undefined,
    prefix ? `${prefix}_${ULID}` : undefined,
    schema.format === "date-time" || name?.endsWith("_at") ? NOW : undefined,
    schema.format === "uri" ? "https://example.com/resource" : undefined,
    schema.format === "uuid" ? "3f2b8c1e-5d4a-4e7b-9c6f-1a2b3c4d5e6f" : undefined,
    name === "id" ? `obj_${ULID}` : undefined,
  ];
  for (const c of candidates) if (fitsString(schema, c)) return c;
  // Lengths alone: a run of letters as long as required.
  // Should that miss a pattern, the linters in CI name the field (add a value to BY_NAME); the
  // document served at run time must not fail over an example.
  return "example".padEnd(schema.minLength ?? 0, "x").slice(0, schema.maxLength ?? Infinity);
}

function numberExample(schema: SchemaObject, name: string | undefined): number {
  const named = name !== undefined ? BY_NAME[name] : undefined;
  const min = schema.minimum ?? (typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : undefined);
  const max = schema.maximum ?? (typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - 1 : undefined);
  for (const c of [named, schema.default]) {
    if (typeof c === "number" && (min === undefined || c >= min) && (max === undefined || c <= max)) return c;
  }
  return min ?? (max !== undefined && max < 0 ? max : 0);
}

export type Components = Record<string, SchemaObject>;

/** An example value of `schema`; `request` leaves out optional fields but a few. */
export function exampleOf(schema: SchemaObject | ReferenceObject, components: Components, request: boolean, name?: string, depth = 0, component?: string): unknown {
  if (depth > 12) return undefined;
  if (typeof schema.$ref === "string") {
    const ref = schema.$ref.replace("#/components/schemas/", "");
    if (ref === "Problem") return problemExample(400);
    return exampleOf(components[ref]!, components, request, name, depth + 1, ref);
  }
  schema = schema as SchemaObject;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return name !== undefined && schema.enum.includes(BY_NAME[name]) ? BY_NAME[name] : schema.enum[0];
  const named = name !== undefined ? BY_NAME[name] : undefined;
  if (fitsObject(schema, named) || (schema.type === "array" && Array.isArray(named))) return named;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) {
    const first = variants.find((v) => !("type" in v && v.type === "null")) ?? variants[0]!;
    return exampleOf(first, components, request, name, depth + 1);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "string":
      return stringExample(schema, name, component);
    case "integer":
    case "number":
      return numberExample(schema, name);
    case "boolean":
      return true;
    case "null":
      return null;
    case "array": {
      const item = schema.items ? exampleOf(schema.items, components, request, undefined, depth + 1) : "example";
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case "object":
    default: {
      const out: Record<string, unknown> = {};
      const required = new Set(schema.required ?? []);
      for (const [key, value] of Object.entries(schema.properties ?? {})) {
        if (request && !required.has(key) && !SHOWN_OPTIONAL.has(key)) continue;
        out[key] = exampleOf(value, components, request, key, depth + 1, component);
      }
      return out;
    }
  }
}

/** A problem+json body as the server writes it for `status` (the first code with that status). */
export function problemExample(status: number): Record<string, unknown> {
  const [code, { title }] = Object.entries(ERROR_CODES).find(([, v]) => v.status === status) ?? ["internal", ERROR_CODES.internal];
  const body: Record<string, unknown> = {
    type: `https://docs.svc-gateway.dev/errors/${code}`,
    title,
    status,
    detail: code === "validation_failed" ? "to: must be a phone number" : title,
    code,
    request_id: `req_${ULID}`,
  };
  if (code === "validation_failed") body.errors = [{ path: "to", message: "must be a phone number" }];
  return body;
}
