// Both protocol revisions at POST /v1/mcp, through the official SDK (v2): a request that carries
// the 2026-07-28 per-request envelope goes to the SDK's stateless entry (`createMcpHandler`,
// modern only); anything else is 2025-era traffic (initialize, then tools/list or tools/call with
// the MCP-Protocol-Version header) and gets a fresh server on the SDK's streamable HTTP
// transport, stateless, answering JSON as this endpoint always has. The SDK's own classifier
// (`isLegacyRequest`) decides, so the two can never disagree about a request.
import { AsyncLocalStorage } from "node:async_hooks";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Request, Response } from "express";
import { createMcpHandler, isLegacyRequest, WebStandardStreamableHTTPServerTransport, type McpHttpHandler, type Server } from "@modelcontextprotocol/server";
import type { Logger } from "../logger.js";
import type { ToolEnv } from "./tool.js";

/** The server of one request, for the credential and log of `env`. */
export type ServerFactory = (env: ToolEnv) => Server;

export class McpTransport {
  // createMcpHandler calls its factory without our request: the request's env travels with the
  // async context of the call instead (no shared variable between concurrent requests).
  private readonly current = new AsyncLocalStorage<ToolEnv>();
  private readonly modern: McpHttpHandler;

  constructor(
    private readonly serverFor: ServerFactory,
    log: Logger,
  ) {
    this.modern = createMcpHandler(() => this.serverFor(this.current.getStore()!), {
      legacy: "reject",
      // Refusals of the protocol (a bad envelope, an unsupported revision) are answered to the client.
      onerror: (err) => log.debug({ err: err.message }, "mcp request refused"),
    });
  }

  async serve(env: ToolEnv, req: Request, res: Response): Promise<void> {
    const request = webRequestOf(req, res);
    const legacy = await isLegacyRequest(request, req.body);
    const response = legacy ? await this.legacy(env, request, req.body) : await this.current.run(env, () => this.modern.fetch(request, { parsedBody: req.body }));
    await sendResponse(response, res);
  }

  /** A 2025-era request: a fresh server on a stateless transport (no session id), JSON answers. */
  private async legacy(env: ToolEnv, request: globalThis.Request, body: unknown): Promise<globalThis.Response> {
    const server = this.serverFor(env);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody: body });
    } finally {
      void transport.close();
      void server.close();
    }
  }
}

/**
 * The web-standard request the SDK takes, without a body: express read it already (1 MiB, strict
 * JSON) and the SDK takes it parsed. Aborted when the client goes away.
 */
function webRequestOf(req: Request, res: Response): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const aborted = new AbortController();
  res.on("close", () => aborted.abort());
  return new globalThis.Request(`${req.protocol}://${req.headers.host}${req.originalUrl}`, { method: req.method, headers, signal: aborted.signal });
}

const HOP_BY_HOP = new Set(["content-length", "transfer-encoding", "connection", "keep-alive", "upgrade"]);

async function sendResponse(response: globalThis.Response, res: Response): Promise<void> {
  res.status(response.status);
  response.headers.forEach((value, name) => res.setHeader(name, value));
  if (response.body === null) return void res.end();
  await pipeline(Readable.fromWeb(response.body as WebReadableStream), res);
}
