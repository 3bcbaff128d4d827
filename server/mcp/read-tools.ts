// The read tools: thin adapters over the services of the REST handlers, in the credential's
// workspace. Message and schedule views are cut to metadata: no tool returns message content
// (body, media, location, context, metadata), docs/mcp.md.
import { z } from "zod";
import { Connection as ConnectionSchema } from "../../contract/connections.js";
import { Direction, MessageStatus } from "../../contract/common.js";
import { ListMessagesQuery, Message, NumberCheck, NumberCheckQuery, TimelineEntry } from "../../contract/messages.js";
import { ListSchedulesQuery, Schedule } from "../../contract/schedules.js";
import { ListWebhookDeliveriesQuery, WebhookDeliveryPage } from "../../contract/webhooks.js";
import { Usage, UsageQuery } from "../../contract/workspace.js";
import { ChatPage } from "../../contract/conversations.js";
import { Group, GroupList } from "../../contract/groups.js";
import { connectionView } from "../connections/service.js";
import { scheduleView } from "../schedules/service.js";
import { readTool, type Tool } from "./tool.js";

/** A message without its content: what an assistant may see. */
export const MessageMeta = Message.omit({ body: true, media: true, location: true, context: true, metadata: true, poll: true, reactions: true }).extend({
  kind: z.enum(["text", "media", "location", "poll"]).describe("What the message carries; its content is never shown"),
});
export type MessageMeta = z.infer<typeof MessageMeta>;

export function messageMeta(m: Message): MessageMeta {
  const { body: _b, media, location, context: _c, metadata: _m, poll, reactions: _r, ...rest } = m;
  return { ...rest, kind: media ? "media" : location ? "location" : poll ? "poll" : "text" };
}

/** A schedule with its message template reduced to where it goes. */
export const ScheduleMeta = Schedule.omit({ message: true }).extend({
  connection: z.string().nullable(),
  to: Message.shape.to.nullable().describe("The recipient of every occurrence"),
});

function scheduleMeta(s: Parameters<typeof scheduleView>[0]) {
  const { message, ...rest } = scheduleView(s);
  return { ...rest, connection: typeof message.connection === "string" ? message.connection : null, to: message.to ?? null };
}

const Slug = z.object({ connection: z.string().min(1).max(40).describe("The connection's slug") });
const ScheduleId = z.object({ id: z.string().min(1).max(64).describe("The schedule id (sch_…)") });

export const Whoami = z.object({
  principal: z.object({
    type: z.enum(["api_key", "oauth_token"]),
    id: z.string(),
    name: z.string().nullable(),
  }),
  scopes: z.array(z.string()),
  workspace: z.object({ id: z.string(), name: z.string(), plan: z.string() }),
});

export const readTools: Tool[] = [
  readTool({
    name: "list_chats",
    title: "List chats",
    description:
      "The chats of a connection (a contact's number, lid:<digits>, or group:<id>), newest last message first, each with its last " +
      "message's id, direction, status and time and its count of unread inbound messages. No content. Paginate with next_cursor.",
    input: Slug.extend({ limit: z.number().int().min(1).max(100).optional(), cursor: z.string().min(1).max(200).optional() }).strict(),
    output: ChatPage,
    async run({ services, principal }, args) {
      return services.conversations.listChats(principal.workspaceId, args.connection, { limit: args.limit ?? 25, cursor: args.cursor });
    },
  }),
  readTool({
    name: "list_groups",
    title: "List groups",
    description:
      "The groups a connected connection's number is in, newest first: id, subject, size and the number's own role. No message content. Paginate with next_cursor.",
    input: Slug.extend({ limit: z.number().int().min(1).max(100).optional(), cursor: z.string().min(1).max(200).optional() }).strict(),
    output: GroupList,
    async run({ services, principal }, args) {
      return services.groups.list(principal, args.connection, { limit: args.limit ?? 25, cursor: args.cursor });
    },
  }),
  readTool({
    name: "get_group",
    title: "Get a group",
    description: "One group by its id (e.g. 120363…@g.us): subject, description, settings and participants with their roles. No message content.",
    input: Slug.extend({ group: z.string().min(1).max(64) }).strict(),
    output: Group,
    async run({ services, principal }, args) {
      return services.groups.get(principal, args.connection, args.group);
    },
  }),
  readTool({
    name: "whoami",
    title: "Who am I",
    description: "The credential this session uses, its scopes and its workspace (name and plan). Call first to learn what you may do.",
    input: z.object({}).strict(),
    output: Whoami,
    async run({ services, principal }) {
      const ws = await services.workspaces.get(principal.workspaceId);
      const who =
        principal.kind === "api_key"
          ? { type: "api_key" as const, id: principal.keyId, name: principal.name }
          : { type: "oauth_token" as const, id: principal.kind === "oauth" ? principal.clientId : principal.userId, name: null };
      return { principal: who, scopes: principal.kind === "session" ? [] : principal.scopes, workspace: { id: ws.id, name: ws.name, plan: ws.planId } };
    },
  }),
  readTool({
    name: "list_connections",
    title: "List connections",
    description: "Every messaging number (connection) of the workspace with its slug and state. Only `connected` ones can send now.",
    input: z.object({}).strict(),
    output: z.object({ data: z.array(ConnectionSchema) }),
    async run({ services, principal }) {
      return { data: (await services.connections.list(principal)).map(connectionView) };
    },
  }),
  readTool({
    name: "get_connection",
    title: "Get a connection",
    description: "One connection by slug: its state (created, pairing, connected, disconnected, suspended) and linked number.",
    input: Slug.strict(),
    output: ConnectionSchema,
    async run({ services, principal }, args) {
      return connectionView(await services.connections.get(principal, args.connection));
    },
  }),
  readTool({
    name: "check_number",
    title: "Check a number",
    description: "Asks the network, through a connected connection, whether a phone number can receive messages. `checked: false` means it could not tell.",
    input: NumberCheckQuery,
    output: NumberCheck,
    async run({ services, principal, log }, args) {
      return services.messageReader.checkNumber(principal.workspaceId, args, log);
    },
  }),
  readTool({
    name: "list_messages",
    title: "List messages",
    description:
      "Messages newest first with status and recipient (never their content), filtered by connection, status or direction. Pass next_cursor back as cursor for the next page.",
    input: ListMessagesQuery.extend({ limit: z.number().int().min(1).max(100).default(25), status: MessageStatus.optional(), direction: Direction.optional() }),
    output: z.object({ data: z.array(MessageMeta), next_cursor: z.string().nullable() }),
    async run({ services, principal }, args) {
      const page = await services.messageReader.list(principal.workspaceId, args);
      return { data: page.data.map(messageMeta), next_cursor: page.next_cursor };
    },
  }),
  readTool({
    name: "get_message",
    title: "Get a message's status",
    description: "One message by id (msg_…): its status, the timeline of every status change, and the error if it failed. Never its content.",
    input: z.object({ id: z.string().min(1).max(64).describe("The message id (msg_…)") }).strict(),
    output: MessageMeta.extend({ timeline: z.array(TimelineEntry) }),
    async run({ services, principal }, args) {
      const m = await services.messageReader.get(principal.workspaceId, args.id);
      return { ...messageMeta(m), timeline: m.timeline };
    },
  }),
  readTool({
    name: "list_schedules",
    title: "List schedules",
    description: "Recurring sends of the workspace with their status, recurrence, time zone and next run (message content omitted).",
    input: ListSchedulesQuery,
    output: z.object({ data: z.array(ScheduleMeta) }),
    async run({ services, principal }, args) {
      return { data: (await services.schedules.list(principal.workspaceId, args.status)).map(scheduleMeta) };
    },
  }),
  readTool({
    name: "get_schedule",
    title: "Get a schedule",
    description: "One schedule by id (sch_…): status, recurrence, occurrences so far, next and last run.",
    input: ScheduleId.strict(),
    output: ScheduleMeta,
    async run({ services, principal }, args) {
      return scheduleMeta(await services.schedules.get(principal.workspaceId, args.id));
    },
  }),
  readTool({
    name: "get_usage",
    title: "Get usage",
    description: "Messages sent and received per day (UTC) over the last `days` days, with totals.",
    input: UsageQuery.extend({ days: z.number().int().min(1).max(365).default(30) }),
    output: Usage,
    async run({ services, principal }, args) {
      return services.workspaces.usage(principal.workspaceId, args.days);
    },
  }),
  readTool({
    name: "list_webhook_deliveries",
    title: "List webhook deliveries",
    description: "Deliveries of one webhook endpoint (whe_…), newest first, with every attempt's status code and error. Use it to debug a receiver.",
    input: ListWebhookDeliveriesQuery.extend({
      endpoint_id: z.string().min(1).max(64).describe("The webhook endpoint id (whe_…)"),
      limit: z.number().int().min(1).max(100).default(25),
    }),
    output: WebhookDeliveryPage,
    async run({ services, principal }, args) {
      const { endpoint_id, ...query } = args;
      return services.webhooks.listDeliveries(principal, endpoint_id, query);
    },
  }),
];
