// POST /v1/mcp: the official SDK (v2), stateless, MCP revisions 2026-07-28 and 2025-11-25 (and
// the older 2025 ones) at the same address (transport.ts). Authentication, the scope mcp:read and
// the plan gate ran before this (server/http/authenticate.ts, from the route's metadata); the
// scope mcp:write of a mutating tool and DNS-rebinding protection are checked here, before the
// protocol.
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { Router } from "express";
import type { Config } from "../config.js";
import { ApiError, sendProblem } from "../http/errors.js";
import { principalOf } from "../http/principal.js";
import type { Logger } from "../logger.js";
import { scopesOf, toolNamed } from "./catalog.js";
import { isMutating, type ToolServices } from "./tool.js";
import type { McpTransport } from "./transport.js";

export { TOOLS, toolListing } from "./catalog.js";

export const MCP_PATH = "/v1/mcp";

/** The protected-resource metadata address named in every 401 of the tool resource (docs/mcp.md). */
export function resourceMetadataUrl(webUrl: string): string {
  return `${webUrl}/.well-known/oauth-protected-resource${MCP_PATH}`;
}

/**
 * DNS-rebinding protection, before anything else on the tool resource: the Host must be the
 * gateway's own (WEB_URL or BASE_URL, any port), and a browser's Origin one of those origins.
 * GET (an SSE stream) and DELETE (a session) mean nothing to a stateless server: 405.
 */
export function mcpEdge(config: Pick<Config, "webUrl" | "baseUrl">): Router {
  const urls = [config.webUrl, config.baseUrl].map((u) => new URL(u));
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
export function mcpHandler(services: ToolServices, config: Pick<Config, "webUrl" | "secretKey">, logger: Logger): RequestHandler {
  const metadataUrl = resourceMetadataUrl(config.webUrl);
  // The SDK and the protocol's modules load with the first call, not at every start (about a
  // sixth of a second of CPU and their memory, in a gateway no assistant may ever call).
  let transport: Promise<McpTransport> | undefined;
  const loadTransport = () =>
    (transport ??= Promise.all([import("./confirm.js"), import("./protocol.js"), import("./transport.js")]).then(([{ ConfirmQuestions }, { toolServer }, { McpTransport }]) => {
      const questions = new ConfirmQuestions(config.secretKey);
      return new McpTransport((env) => toolServer(env, questions), logger);
    }));
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
    loadTransport()
      .then((t) => t.serve({ services, principal, log: req.log ?? logger }, req, res))
      .catch(next);
  };
}

/** Names of mutating tools a JSON-RPC message (or batch) calls. */
function writeToolsCalled(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    if (typeof m !== "object" || m === null || (m as { method?: unknown }).method !== "tools/call") return [];
    const tool = toolNamed((m as { params?: { name?: unknown } }).params?.name);
    return tool && isMutating(tool) ? [tool.name] : [];
  });
}
