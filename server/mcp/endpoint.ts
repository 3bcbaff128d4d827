// POST /v1/mcp: the official SDK's streamable HTTP transport, stateless (a fresh server and
// transport per request, no Mcp-Session-Id) with JSON responses. Authentication, the scope mcp:read
// and the plan gate ran before this (server/http/authenticate.ts, from the route's metadata).
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { Router } from "express";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AppContext } from "../context.js";
import { ApiError, sendProblem } from "../http/errors.js";
import { principalOf, type Principal } from "../http/principal.js";
import { isMutating, jsonSchemaOf, requiredScope, type Tool, type ToolEnv } from "./tool.js";
import { readTools } from "./read-tools.js";
import { writeTools } from "./write-tools.js";

export const TOOLS: readonly Tool[] = [...readTools, ...writeTools];
const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

export const MCP_PATH = "/v1/mcp";

/** The protected-resource metadata address named in every 401 of the tool resource (spec 5.8). */
export function resourceMetadataUrl(webUrl: string): string {
  return `${webUrl}/.well-known/oauth-protected-resource${MCP_PATH}`;
}

function scopesOf(p: Principal): readonly string[] {
  return p.kind === "session" ? [] : p.scopes;
}

/** The tools a credential may call: read tools with mcp:read, mutating ones with mcp:write too. */
export function toolsFor(p: Principal): Tool[] {
  const scopes = scopesOf(p);
  return TOOLS.filter((t) => scopes.includes("mcp:read") && scopes.includes(requiredScope(t)));
}

export function toolListing(p: Principal) {
  return toolsFor(p).map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    read_only: !isMutating(t),
    required_scope: requiredScope(t),
    input_schema: jsonSchemaOf(t.input),
  }));
}

/**
 * DNS-rebinding protection, before anything else on the tool resource: the Host must be the
 * gateway's own (WEB_URL or BASE_URL, any port), and a browser's Origin one of those origins.
 * GET (an SSE stream) and DELETE (a session) mean nothing to a stateless server: 405.
 */
export function mcpEdge(ctx: AppContext): Router {
  const urls = [ctx.config.webUrl, ctx.config.baseUrl].map((u) => new URL(u));
  const hosts = new Set(urls.map((u) => u.hostname.toLowerCase()));
  const origins = new Set(urls.map((u) => u.origin));
  // A gateway addressed by a loopback name answers to each of them (localhost, 127.0.0.1, [::1]),
  // on any port, as the SDK's own host validation does: local tools sit behind proxies and ports.
  const loopback = [...hosts].some((h) => LOOPBACK_HOSTS.includes(h));
  if (loopback) for (const h of LOOPBACK_HOSTS) hosts.add(h);
  const originAllowed = (origin: string) => origins.has(origin) || (loopback && LOOPBACK_HOSTS.includes(hostnameOf(new URL(origin).host) ?? ""));
  const router = Router();
  router.all(MCP_PATH, (req, res, next) => {
    const host = hostnameOf(req.headers.host);
    if (!host || !hosts.has(host)) return sendProblem(res, new ApiError("forbidden", "The Host header does not name this gateway."));
    const origin = req.headers.origin;
    if (origin !== undefined && !safeOriginAllowed(originAllowed, origin)) return sendProblem(res, new ApiError("forbidden", "Requests from this Origin are not accepted."));
    if (req.method === "POST") return next();
    res.setHeader("Allow", "POST");
    sendProblem(res, new ApiError("method_not_allowed", "This endpoint is stateless: send every message with POST."));
  });
  return router;
}

function safeOriginAllowed(allowed: (origin: string) => boolean, origin: string): boolean {
  try {
    return allowed(origin);
  } catch {
    return false; // not a URL ("null", garbage)
  }
}

const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

function hostnameOf(host: string | undefined): string | null {
  if (!host) return null;
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** Route middleware of contract.mcp.call: it answers the request itself. */
export function mcpHandler(ctx: AppContext): RequestHandler {
  const metadataUrl = resourceMetadataUrl(ctx.config.webUrl);
  return (req: Request, res: Response, next: NextFunction) => {
    const principal = principalOf(res);
    const missing = writeToolsCalled(req.body).filter(() => !scopesOf(principal).includes("mcp:write"));
    if (missing.length > 0) {
      // The MCP authorization spec's step-up answer: a client may ask the member for more scope.
      return sendProblem(
        res,
        new ApiError("insufficient_scope", `The tool ${missing[0]} requires the scope mcp:write.`, {
          required_scope: "mcp:write",
          headers: { "WWW-Authenticate": `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="${metadataUrl}"` },
        }),
      );
    }
    serve({ ctx, principal, log: req.log ?? ctx.logger }, req, res).catch(next);
  };
}

/** Names of mutating tools a JSON-RPC message (or batch) calls. */
function writeToolsCalled(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    if (typeof m !== "object" || m === null || (m as { method?: unknown }).method !== "tools/call") return [];
    const name = (m as { params?: { name?: unknown } }).params?.name;
    const tool = typeof name === "string" ? BY_NAME.get(name) : undefined;
    return tool && isMutating(tool) ? [tool.name] : [];
  });
}

async function serve(env: ToolEnv, req: Request, res: Response): Promise<void> {
  const server = new Server({ name: "svc-gateway", version: "1.0.0" }, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: toolsFor(env.principal).map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: jsonSchemaOf(t.input) as { type: "object" },
      outputSchema: jsonSchemaOf(t.output) as { type: "object" },
      annotations: { title: t.title, ...t.annotations },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => callTool(env, request.params.name, request.params.arguments));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}

async function callTool(env: ToolEnv, name: string, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
  const tool = toolsFor(env.principal).find((t) => t.name === name);
  if (!tool) return failure("unknown_tool", `No tool named ${name} is available to this credential.`);
  const parsed = tool.input.safeParse(args ?? {});
  if (!parsed.success) {
    return failure("validation_failed", parsed.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; "));
  }
  try {
    const confirmed = (parsed.data as { confirm?: boolean }).confirm === true;
    const out = isMutating(tool) && !confirmed ? await tool.preview!(env, parsed.data) : await tool.run(env, parsed.data);
    return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
  } catch (err) {
    if (err instanceof ApiError) return failure(err.code, err.message);
    env.log.error({ err, tool: name }, "tool failed");
    return failure("internal", "The tool failed unexpectedly; try again later.");
  }
}

/** A tool-level error: the model reads it and can correct its call (MCP: isError results). */
function failure(code: string, detail: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify({ error: code, detail }) }] };
}
