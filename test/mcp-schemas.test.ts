// Tool schemas every mainstream MCP client reads without a warning: walks every input and output
// schema that tools/list answers (each revision) and GET /v1/mcp/tools, refusing what the MCP
// Inspector's portability check reports (its rules, as of Inspector 2.12): a `type` array, a
// `$ref` outside the document, a schema that constrains nothing (`{}`), a bare boolean where a
// schema object is expected. Stricter than the Inspector: no `$ref` at all (clients differ in
// resolving even local ones) and an object at the root.
import { expect } from "chai";
import { http, newWorkspace } from "./support/actors.js";
import { mcpClient, READ_TOOLS, REVISIONS, WRITE_TOOLS } from "./support/mcp.js";

type Node = Record<string, unknown>;

/** Keywords that assert something of a value: a schema with none of them accepts anything. */
const CONSTRAINING = new Set(
  (
    "type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern format " +
    "contentMediaType contentEncoding contentSchema maxItems minItems uniqueItems maxContains minContains maxProperties " +
    "minProperties required dependentRequired allOf anyOf oneOf not items prefixItems contains additionalItems " +
    "unevaluatedItems properties patternProperties additionalProperties unevaluatedProperties propertyNames " +
    "dependentSchemas dependencies $ref $dynamicRef $recursiveRef"
  ).split(" "),
);
/** Keywords where `true` / `false` are ordinary values, not schemas standing in for objects. */
const BOOLEAN_VALUED = new Set(["additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"]);
const ONE = ["items", "contains", "not", "propertyNames", "if", "then", "else", "contentSchema", ...BOOLEAN_VALUED];
const LIST = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAP = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];

/** Every portability problem of `schema`, as `path: what`. */
export function portabilityProblems(schema: unknown, path = "", keyword?: string): string[] {
  if (typeof schema === "boolean") return keyword && BOOLEAN_VALUED.has(keyword) ? [] : [`${path}: a bare ${schema} instead of a schema object`];
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return [];
  const node = schema as Node;
  const problems: string[] = [];
  if (Array.isArray(node.type)) problems.push(`${path}: type is an array ${JSON.stringify(node.type)}`);
  if ("$ref" in node) problems.push(`${path}: $ref ${String(node.$ref)}`);
  const conditional = "if" in node && ("then" in node || "else" in node);
  if (keyword !== "not" && !conditional && !Object.keys(node).some((k) => CONSTRAINING.has(k))) problems.push(`${path}: constrains nothing`);
  for (const k of MAP) {
    if (typeof node[k] === "object" && node[k] !== null) for (const [name, sub] of Object.entries(node[k] as Node)) problems.push(...portabilityProblems(sub, `${path}.${k}.${name}`, k));
  }
  for (const k of LIST) if (Array.isArray(node[k])) (node[k] as unknown[]).forEach((sub, i) => problems.push(...portabilityProblems(sub, `${path}.${k}[${i}]`, k)));
  for (const k of ONE) {
    if (!(k in node)) continue;
    if (Array.isArray(node[k])) (node[k] as unknown[]).forEach((sub, i) => problems.push(...portabilityProblems(sub, `${path}.${k}[${i}]`, k)));
    else problems.push(...portabilityProblems(node[k], `${path}.${k}`, k));
  }
  return problems;
}

describe("tool endpoint (MCP): portable tool schemas", () => {
  let key: string;

  before(async () => {
    key = (await (await newWorkspace()).key(["mcp:read", "mcp:write"])).key;
  });

  it("the walker finds what the Inspector warns about", () => {
    expect(portabilityProblems({ type: "object", properties: { a: { type: ["string", "null"] }, b: {}, c: true, d: { $ref: "https://x/s.json" } } })).to.deep.equal([
      ".properties.a: type is an array [\"string\",\"null\"]",
      ".properties.b: constrains nothing",
      ".properties.c: a bare true instead of a schema object",
      ".properties.d: $ref https://x/s.json",
    ]);
    expect(portabilityProblems({ type: "object", additionalProperties: true, properties: { n: { anyOf: [{ type: "string" }, { type: "null" }] } } })).to.deep.equal([]);
  });

  for (const revision of REVISIONS) {
    it(`${revision}: every input and output schema of tools/list is portable, with an object at the root`, async () => {
      const client = await mcpClient(key, revision);
      const { tools } = await client.listTools();
      expect(tools).to.have.length(READ_TOOLS.length + WRITE_TOOLS.length);
      const problems = tools.flatMap((t) => [
        ...portabilityProblems(t.inputSchema).map((p) => `${t.name} input${p}`),
        ...portabilityProblems(t.outputSchema).map((p) => `${t.name} output${p}`),
      ]);
      expect(problems).to.deep.equal([]);
      for (const t of tools) expect([t.inputSchema.type, t.outputSchema?.type], t.name).to.deep.equal(["object", "object"]);
      await client.close();
    });
  }

  it("GET /v1/mcp/tools gives the same portable input schemas", async () => {
    const res = await http("GET", "/v1/mcp/tools", { headers: { authorization: `Bearer ${key}` } });
    const data = res.json.data as { name: string; input_schema: unknown }[];
    expect(data).to.have.length(READ_TOOLS.length + WRITE_TOOLS.length);
    expect(data.flatMap((t) => portabilityProblems(t.input_schema).map((p) => `${t.name}${p}`))).to.deep.equal([]);
  });
});
