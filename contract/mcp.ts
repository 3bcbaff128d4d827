// Hosted tool endpoint (docs/mcp.md): Model Context Protocol over stateless streamable HTTP. The
// JSON-RPC payloads are validated by the MCP layer, not here.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { FreeObject, NoBody, ScopeSchema, problems, type RouteMetadata } from "./common.js";

const c = initContract();

export const McpRequestBody = z.unknown().describe("A JSON-RPC 2.0 message or batch (Model Context Protocol)");
export const McpResponseBody = z.unknown().describe("The JSON-RPC 2.0 response");

export const McpTool = z.object({
  name: z.string(),
  title: z.string(),
  description: z.string(),
  read_only: z.boolean().describe("false: a mutating tool, which only previews until called again with `confirm: true`"),
  required_scope: ScopeSchema,
  input_schema: FreeObject.describe("JSON Schema of the tool's arguments"),
});
export type McpTool = z.infer<typeof McpTool>;

export const McpToolList = z.object({ data: z.array(McpTool) });
export type McpToolList = z.infer<typeof McpToolList>;

export const mcp = c.router(
  {
    call: {
      method: "POST",
      path: "/v1/mcp",
      summary: "Model Context Protocol endpoint",
      description:
        "Stateless streamable HTTP, MCP revisions 2026-07-28 (server/discover, a per-request envelope) and 2025-11-25 " +
        "(initialize) at the same address. Accepts an API key with mcp:read or an OAuth access token (`svc_mcp_at_…`). " +
        "Without credentials: 401 with a WWW-Authenticate header naming the protected-resource metadata. " +
        "Notifications and responses are answered 202 without a body. No tool returns message content. " +
        "A tools/call of a mutating tool without mcp:write: 403 with `WWW-Authenticate: Bearer error=\"insufficient_scope\"`. " +
        "Wrong Host or Origin (DNS rebinding): 403. GET and DELETE: 405. The transport's own refusals (406 without an Accept " +
        "naming application/json and text/event-stream, 415) carry JSON-RPC error bodies.",
      body: McpRequestBody,
      responses: { 200: McpResponseBody, 202: NoBody, ...problems(400, 401, 402, 403, 429) },
      metadata: { security: { auth: "mcp", scope: "mcp:read" }, tag: "MCP", feature: "mcp" } satisfies RouteMetadata,
    },
    tools: {
      method: "GET",
      path: "/v1/mcp/tools",
      summary: "List the tools the credential may call",
      responses: { 200: McpToolList, ...problems(401, 403, 429) },
      metadata: { security: { auth: "key", scope: "mcp:read" }, tag: "MCP" } satisfies RouteMetadata,
    },
  },
  { strictStatusCodes: true },
);
