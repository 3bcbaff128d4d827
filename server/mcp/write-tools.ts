// The mutating tools. Each previews until called again with `confirm: true`, then calls the same
// service as its REST route. A confirmed send_message carries an Idempotency-Key derived from its
// arguments, so an assistant that repeats the call sends once (docs/mcp.md).
import { createHash } from "node:crypto";
import { z } from "zod";
import { SendMessageBody } from "../../contract/messages.js";
import { canonicalJson } from "../http/idempotency.js";
import { CANCELABLE } from "../messages/status.js";
import { allowedFrom, nextStatus, type ScheduleAction } from "../schedules/service.js";
import { messageMeta } from "./read-tools.js";
import { mutatingTool, previewOf, type Tool } from "./tool.js";

/** Everything a mutating tool may answer: a preview, or what was done. */
const Outcome = z
  .object({
    preview: z.boolean().describe("true: nothing changed; call again with confirm: true to act"),
    tool: z.string(),
    would: z.string().optional(),
    next_step: z.string().optional(),
    done: z.string().optional(),
  })
  .passthrough();

const MessageId = z.string().min(1).max(64).describe("The message id (msg_…)");

// Assistants send text, media or a location; free-form context and metadata stay with the REST API.
const SendInput = SendMessageBody.omit({ context: true, metadata: true, context_sensitivity: true });
type SendInput = z.infer<typeof SendInput>;

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The idempotency key of a confirmed send: the digest of its arguments (without `confirm`). */
export function sendIdempotencyKey(args: SendInput): string {
  return `mcp_send_${sha256(canonicalJson(args))}`;
}

function sendDetails(args: SendInput) {
  return {
    connection: args.connection,
    to: args.to,
    body_length: args.body?.length ?? 0,
    body_sha256: args.body !== undefined ? sha256(args.body) : null,
    attachment: args.media ? `media${args.media.kind ? ` (${args.media.kind})` : ""}` : args.location ? "location" : null,
    send_at: args.send_at ?? null,
  };
}

function scheduleTool(action: Exclude<ScheduleAction, "complete">, title: string, description: string, destructive: boolean): Tool {
  const name = `${action}_schedule`;
  return mutatingTool({
    name,
    title,
    description,
    input: z.object({ id: z.string().min(1).max(64).describe("The schedule id (sch_…)") }).strict(),
    output: Outcome,
    destructive,
    async preview({ services, principal }, args) {
      const schedule = await services.schedules.get(principal.workspaceId, args.id);
      const to = nextStatus(action, schedule.status);
      return previewOf(name, to ? `${action} schedule ${schedule.id} ("${schedule.name}"): ${schedule.status} → ${to}` : "nothing: not allowed from this status", {
        id: schedule.id,
        status: schedule.status,
        ...(to ? { new_status: to } : { refused: `A schedule can be ${action}d only when ${allowedFrom(action).join(" or ")}.` }),
      });
    },
    async run({ services, principal }, args) {
      const s = await services.schedules[action](principal.workspaceId, args.id);
      return { preview: false, tool: name, done: `${action}d`, id: s.id, status: s.status };
    },
  });
}

export const writeTools: Tool[] = [
  mutatingTool({
    name: "send_message",
    title: "Send a message",
    description:
      "Sends a text (optionally with a media URL or a location) from a connection to a phone number or group. Without confirm: checks " +
      "every rule and previews (connection, recipient, length and SHA-256 of the body), sending nothing. With confirm: true it " +
      "queues the message and returns its id; repeating the same confirmed call sends once. Accepted is not delivered: follow it with get_message.",
    input: SendInput,
    output: Outcome,
    destructive: false,
    openWorld: true,
    async preview({ services, principal }, args) {
      const refused = await services.sender.check(principal, args);
      if (refused) throw await services.sender.problem(principal, refused);
      return previewOf("send_message", args.send_at ? `schedule a message for ${args.send_at}` : "send a message now", sendDetails(args));
    },
    async run(env, args) {
      const { confirm: _c, ...send } = args as SendInput & { confirm?: boolean };
      const accepted = await env.services.sender.sendOrThrow(env.principal, send, { idempotencyKey: sendIdempotencyKey(send) });
      const m = messageMeta(accepted.body);
      return { preview: false, tool: "send_message", done: accepted.replayed ? "already sent by an identical call" : "queued", id: m.id, status: m.status, connection: m.connection, to: m.to, send_at: m.send_at, replayed: accepted.replayed };
    },
  }),
  mutatingTool({
    name: "cancel_message",
    title: "Cancel a message",
    description: "Cancels a message that has not been handed to the network yet (scheduled, accepted or queued). Previews without confirm: true.",
    input: z.object({ id: MessageId }).strict(),
    output: Outcome,
    destructive: true,
    async preview({ services, principal }, args) {
      const m = await services.messageReader.get(principal.workspaceId, args.id);
      const can = CANCELABLE.includes(m.status);
      return previewOf("cancel_message", can ? `cancel message ${m.id} (${m.status}) to ${JSON.stringify(m.to)}` : "nothing: it cannot be canceled any more", {
        id: m.id,
        status: m.status,
        ...(can ? { new_status: "canceled" } : { refused: `Only ${CANCELABLE.join(", ")} messages can be canceled.` }),
      });
    },
    async run({ services, principal }, args) {
      const m = await services.messageLifecycle.cancel(principal.workspaceId, args.id);
      return { preview: false, tool: "cancel_message", done: "canceled", id: m.id, status: m.status };
    },
  }),
  mutatingTool({
    name: "react_to_message",
    title: "React to a message",
    description:
      'Reacts to a message with one emoji ("" removes our reaction). Previews without confirm: true. The message needs a network id ' +
      "(it was received, or handed to the network).",
    input: z.object({ id: MessageId, emoji: z.string().max(32).describe('One emoji; "" removes our reaction') }).strict(),
    output: Outcome,
    destructive: false,
    openWorld: true,
    async preview({ services, principal }, args) {
      const { message } = await services.conversations.find(principal.workspaceId, args.id);
      const ready = message.providerMessageId !== null;
      return previewOf("react_to_message", ready ? (args.emoji === "" ? `remove our reaction to message ${message.id}` : `react to message ${message.id}`) : "nothing: it has no network id yet", {
        id: message.id,
        direction: message.direction,
        emoji: args.emoji,
        ...(ready ? {} : { refused: "The message has no network id yet (it has not been handed to the network)." }),
      });
    },
    async run({ services, principal }, args) {
      const done = await services.conversations.react(principal.workspaceId, args.id, args.emoji);
      return { preview: false, tool: "react_to_message", done: args.emoji === "" ? "reaction removed" : "reacted", id: done.message.id };
    },
  }),
  mutatingTool({
    name: "mark_read",
    title: "Mark a chat read",
    description: "Marks a message and the earlier unread inbound messages of its chat read, on the network too. Previews (how many) without confirm: true.",
    input: z.object({ id: MessageId }).strict(),
    output: Outcome,
    destructive: false,
    openWorld: true,
    async preview({ services, principal }, args) {
      const { message, chat, unread } = await services.conversations.unreadUpTo(principal.workspaceId, args.id);
      return previewOf("mark_read", `mark ${unread.length} unread inbound message(s) of chat ${chat} read`, { id: message.id, chat, unread: unread.length });
    },
    async run({ services, principal }, args) {
      const receipt = await services.conversations.markRead(principal.workspaceId, args.id);
      return { preview: false, tool: "mark_read", done: "marked read", id: receipt.message_id, chat: receipt.chat, marked: receipt.marked };
    },
  }),
  scheduleTool("pause", "Pause a schedule", "Pauses an active schedule: it stops firing until resumed. Previews without confirm: true.", false),
  scheduleTool("resume", "Resume a schedule", "Resumes a paused schedule from now (runs missed while paused do not fire). Previews without confirm: true.", false),
  scheduleTool("cancel", "Cancel a schedule", "Cancels a schedule for good; it never fires again. Previews without confirm: true.", true),
];
