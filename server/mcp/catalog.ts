// The tool table and who may call what: read tools need mcp:read, mutating ones mcp:write too.
// tools/list (both protocol revisions) and GET /v1/mcp/tools are built from here.
import type { Principal } from "../http/principal.js";
import { readTools } from "./read-tools.js";
import { toolJsonSchema } from "./schema.js";
import { isMutating, requiredScope, type Tool } from "./tool.js";
import { writeTools } from "./write-tools.js";

export const TOOLS: readonly Tool[] = [...readTools, ...writeTools];
const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

export function toolNamed(name: unknown): Tool | undefined {
  return typeof name === "string" ? BY_NAME.get(name) : undefined;
}

export function scopesOf(p: Principal): readonly string[] {
  return p.kind === "session" ? [] : p.scopes;
}

/** The tools a credential may call: read tools with mcp:read, mutating ones with mcp:write too. */
export function toolsFor(p: Principal): Tool[] {
  const scopes = scopesOf(p);
  return TOOLS.filter((t) => scopes.includes("mcp:read") && scopes.includes(requiredScope(t)));
}

export interface ToolSchemas {
  input: { type: "object"; [keyword: string]: unknown };
  output: { type: "object"; [keyword: string]: unknown };
}

// Converted on first use, once per tool: the schemas never change while the process runs.
const schemas = new Map<string, ToolSchemas>();

export function schemasOf(tool: Tool): ToolSchemas {
  let found = schemas.get(tool.name);
  if (!found) {
    found = { input: toolJsonSchema(tool.input) as ToolSchemas["input"], output: toolJsonSchema(tool.output) as ToolSchemas["output"] };
    schemas.set(tool.name, found);
  }
  return found;
}

/** GET /v1/mcp/tools. */
export function toolListing(p: Principal) {
  return toolsFor(p).map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    read_only: !isMutating(t),
    required_scope: requiredScope(t),
    input_schema: schemasOf(t).input,
  }));
}

/** A tool as tools/list describes it. */
export function listedTool(t: Tool) {
  const { input, output } = schemasOf(t);
  return { name: t.name, title: t.title, description: t.description, inputSchema: input, outputSchema: output, annotations: { title: t.title, ...t.annotations } };
}
