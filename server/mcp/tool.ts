// What a tool of the endpoint is: a name a model chooses by, schemas for both directions, the scope
// it needs, and a function over the same services the REST handlers call. Mutating tools also
// have a preview, answered while `confirm` is not true (docs/mcp.md).
import { z } from "zod";
import type { Scope } from "../../contract/common.js";
import type { ConnectionService } from "../connections/service.js";
import type { GroupService } from "../groups/service.js";
import type { Principal } from "../http/principal.js";
import type { Logger } from "../logger.js";
import type { Conversations } from "../messages/conversations.js";
import type { MessageLifecycle } from "../messages/lifecycle.js";
import type { MessageReader } from "../messages/reader.js";
import type { MessageSender } from "../messages/send.js";
import type { ScheduleService } from "../schedules/service.js";
import type { WebhookEndpointService } from "../webhooks/service.js";
import type { WorkspaceService } from "../workspace/service.js";

/** The services the tools call: the same the REST handlers call. */
export interface ToolServices {
  sender: MessageSender;
  messageLifecycle: MessageLifecycle;
  /** The list, one message, the export and the number check. */
  messageReader: MessageReader;
  /** A connection's chats and what is done in a chat besides sending. */
  conversations: Conversations;
  connections: ConnectionService;
  /** The groups of a connection's number, through its engine. */
  groups: GroupService;
  schedules: ScheduleService;
  webhooks: WebhookEndpointService;
  workspaces: WorkspaceService;
}

export interface ToolEnv {
  services: ToolServices;
  principal: Principal;
  log: Logger;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface Tool<I extends z.ZodTypeAny = z.ZodTypeAny> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: z.ZodTypeAny;
  annotations: ToolAnnotations;
  /** Mutating tools only: what would happen, without changing anything. */
  preview?: (env: ToolEnv, args: z.infer<I>) => Promise<Record<string, unknown>>;
  run: (env: ToolEnv, args: z.infer<I>) => Promise<Record<string, unknown>>;
}

// Both builders erase the argument type: the endpoint parses arguments with `input` before calling.
export function readTool<I extends z.ZodTypeAny>(t: Omit<Tool<I>, "annotations" | "preview">): Tool {
  return { ...t, annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } } as unknown as Tool;
}

export function mutatingTool<I extends z.AnyZodObject>(
  t: Omit<Tool<I>, "annotations" | "preview" | "input"> & {
    input: I;
    preview: NonNullable<Tool<I>["preview"]>;
    destructive: boolean;
    /** The network is reached (a message leaves): open world. */
    openWorld?: boolean;
  },
): Tool {
  const { destructive, openWorld, ...rest } = t;
  return {
    ...rest,
    input: t.input.extend({ confirm: Confirm }),
    // Confirmed calls are safe to repeat: the same arguments act once (send) or find the move done.
    annotations: { readOnlyHint: false, destructiveHint: destructive, idempotentHint: true, openWorldHint: openWorld ?? false },
  } as unknown as Tool;
}

const Confirm = z
  .boolean()
  .optional()
  .describe("Leave unset first: the call answers a preview and changes nothing. Call again with the same arguments and confirm: true to act.");

export function isMutating(tool: Tool): boolean {
  return tool.preview !== undefined;
}

export function requiredScope(tool: Tool): Scope {
  return isMutating(tool) ? "mcp:write" : "mcp:read";
}

/** The answer of an unconfirmed mutating call: what would happen and how to make it happen. */
export function previewOf(tool: string, would: string, details: Record<string, unknown>): Record<string, unknown> {
  return {
    preview: true,
    tool,
    would,
    ...details,
    next_step: `Nothing has changed. To do this, call ${tool} again with the same arguments and confirm: true.`,
  };
}
