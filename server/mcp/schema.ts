// Tool schemas in the JSON Schema every mainstream MCP client reads. zod-to-json-schema writes a
// nullable primitive as a type array (`{"type": ["string", "null"]}`): legal, but clients that map
// tool schemas onto a single-`type` dialect (Gemini's function declarations, the MCP Inspector's
// portability check) reject or weaken it. Here each type array becomes `anyOf` branches of one
// type each, and a free-form map's value schema (`{}`, which constrains nothing) becomes `true`.
// The OpenAPI document keeps the converter's own output: this is the tool endpoint's dialect only.
import { zodToJsonSchema } from "zod-to-json-schema";
import type { z } from "zod";

type Schema = Record<string, unknown>;

/** Keywords that describe a value whatever its type: they stay on the node that carries `anyOf`. */
const ANNOTATIONS = new Set(["title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"]);

/** Keywords holding one subschema, a list of them, or a map of them. */
const ONE = ["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"];
const LIST = ["anyOf", "allOf", "oneOf", "prefixItems"];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/** JSON Schema (draft 7, refs inlined) of a tool's input or output, written portably. */
export function toolJsonSchema(schema: z.ZodTypeAny): Schema {
  const { $schema: _s, ...rest } = zodToJsonSchema(schema, { $refStrategy: "none", target: "jsonSchema7" }) as Schema;
  return portable(rest);
}

function portable(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) out[key] = portableKeyword(key, value);
  return Array.isArray(out.type) ? splitTypes(out, out.type as string[]) : out;
}

function portableKeyword(key: string, value: unknown): unknown {
  if (ONE.includes(key) && isSchema(value)) {
    // additionalProperties: {} says "any value" without saying it: `true` is the spelling clients accept.
    if (key === "additionalProperties" && Object.keys(value).every((k) => ANNOTATIONS.has(k))) return true;
    return portable(value);
  }
  if (LIST.includes(key) && Array.isArray(value)) return value.map((v) => (isSchema(v) ? portable(v) : v));
  if (MAP.includes(key) && isSchema(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSchema(v) ? portable(v) : v]));
  return value;
}

/** `{"type": ["string", "null"], "maxLength": 9}` → `{"anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}]}`. */
function splitTypes(node: Schema, types: string[]): Schema {
  const outer: Schema = {};
  const constraints: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "type") continue;
    (ANNOTATIONS.has(key) ? outer : constraints)[key] = value;
  }
  const branches = types.map((type) => (type === "null" ? { type } : { type, ...withoutNull(constraints) }));
  return { anyOf: branches, ...outer };
}

/** An `enum` of a nullable enumeration lists null too; its non-null branch does not. */
function withoutNull(constraints: Schema): Schema {
  if (!Array.isArray(constraints.enum)) return constraints;
  return { ...constraints, enum: constraints.enum.filter((v) => v !== null) };
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
