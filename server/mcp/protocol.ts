// The MCP server of one request, the same for both protocol revisions (2026-07-28 and the 2025
// ones): the low-level SDK `Server` with tools/list and tools/call over the tool table, so the
// contract's zod 3 schemas stay ours (JSON Schema through schema.ts) and zod 4 stays inside the
// SDK. server/discover, the per-request envelope and cache hints are the SDK's.
import { isInputRequiredResult, Server, type CallToolResult, type InputRequiredResult, type ServerContext } from "@modelcontextprotocol/server";
import { ApiError } from "../http/errors.js";
import { listedTool, schemasOf, toolsFor } from "./catalog.js";
import type { ConfirmQuestions } from "./confirm.js";
import { isMutating, type ToolEnv } from "./tool.js";

export const SERVER_INFO = { name: "svc-gateway", version: "1.0.0" };

/**
 * Cache hints of 2026-07-28 results. A credential's tool list changes only with its scopes (a
 * member's role) or a new release: its client may keep it five minutes, for itself alone. What
 * server/discover answers is the same for every caller.
 */
const CACHE_HINTS = {
  "tools/list": { ttlMs: 5 * 60_000, cacheScope: "private" },
  "server/discover": { ttlMs: 60 * 60_000, cacheScope: "public" },
} as const;

export function toolServer(env: ToolEnv, questions: ConfirmQuestions): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    cacheHints: CACHE_HINTS,
    requestState: { verify: questions.verify },
  });
  server.setRequestHandler("tools/list", () => ({ tools: toolsFor(env.principal).map(listedTool) }));
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const result = await callTool(env, questions, ctx, request.params.name, request.params.arguments);
    if (isInputRequiredResult(result)) return result;
    const tool = toolsFor(env.principal).find((t) => t.name === request.params.name);
    return server.projectCallToolResult(result, tool && schemasOf(tool).output);
  });
  return server;
}

async function callTool(
  env: ToolEnv,
  questions: ConfirmQuestions,
  ctx: ServerContext,
  name: string,
  args: Record<string, unknown> | undefined,
): Promise<CallToolResult | InputRequiredResult> {
  const tool = toolsFor(env.principal).find((t) => t.name === name);
  if (!tool) return failure("unknown_tool", `No tool named ${name} is available to this credential.`);
  const parsed = tool.input.safeParse(args ?? {});
  if (!parsed.success) {
    return failure("validation_failed", parsed.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; "));
  }
  try {
    const { confirm, ...rest } = parsed.data as { confirm?: boolean };
    if (!isMutating(tool) || confirm === true) return success(await tool.run(env, parsed.data));
    const confirmation = questions.of(ctx, env.principal, tool.name, rest);
    if (confirmation.kind === "accepted") return success(await tool.run(env, parsed.data));
    const preview = await tool.preview!(env, parsed.data);
    if (confirmation.kind === "declined") return success({ ...preview, declined: true, next_step: "The person declined: nothing has changed." });
    // A preview that already says no (a state that does not allow the move) is not worth asking about.
    if (confirmation.kind === "ask" && preview.refused === undefined) return confirmation.question(preview);
    return success(preview);
  } catch (err) {
    if (err instanceof ApiError) return failure(err.code, err.message);
    env.log.error({ err, tool: name }, "tool failed");
    return failure("internal", "The tool failed unexpectedly; try again later.");
  }
}

function success(out: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
}

/** A tool-level error: the model reads it and can correct its call (MCP: isError results). */
function failure(code: string, detail: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify({ error: code, detail }) }] };
}
