// Messages (docs/decisions.md, "Messaging"). Request bodies are `.strict()`: the spec says no other fields are
// accepted, and we reject unknown fields on every body and query so that typos fail loudly.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import {
  ConnectionRef,
  Direction,
  ErrorInfo,
  FreeObject,
  IdParams,
  MESSAGE_STATUSES,
  MessageStatus,
  Timestamp,
  TimezoneName,
  ZonedDateTime,
  page,
  problems,
  queryInteger,
  type RouteMetadata,
  chars,
} from "./common.js";

const c = initContract();

const Phone = chars(5, 40);

/** Recipient: a bare address, or an object with exactly one of `phone` / `group`. */
// When no option comes close (a number, null, an array), zod says only "Invalid input": the
// union's own message names the accepted shapes instead.
export const Recipient = z
  .union([Phone, z.object({ phone: Phone }).strict(), z.object({ group: Phone }).strict()], {
    errorMap: (issue, ctx) => ({
      message: issue.code === "invalid_union" ? "must be a phone number (a string of 5-40 characters), or an object {phone} or {group}" : ctx.defaultError,
    }),
  })
  .describe("A phone number, or `lid:<digits>` for a contact the network knows only by LID (as inbound messages report them); or {phone} or {group}");
export type Recipient = z.infer<typeof Recipient>;

/**
 * A chat: the other side of a conversation on one connection. A contact (`+15550002222`, or
 * `lid:<digits>`) or a group (`group:<id>`).
 */
export const ChatAddress = chars(1, 200).describe("A contact (`+15550002222`, `lid:<digits>`) or a group (`group:<id>`)");

export const MediaKind = z.enum(["image", "video", "audio", "document"]);
export type MediaKind = z.infer<typeof MediaKind>;

export const Media = z
  .object({
    url: chars().url().max(2048),
    kind: MediaKind.optional(),
    mimetype: chars(3, 255).optional(),
    filename: chars(1, 255).optional(),
  })
  .strict();
export type Media = z.infer<typeof Media>;

export const Location = z
  .object({
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
    title: chars(1, 255).optional(),
  })
  .strict();
export type Location = z.infer<typeof Location>;

export const ContextSensitivity = z.enum(["normal", "sensitive", "restricted"]);
export type ContextSensitivity = z.infer<typeof ContextSensitivity>;

export const SendMessageBody = z
  .object({
    connection: ConnectionRef,
    to: Recipient,
    body: chars(0, 4096).optional(),
    media: Media.optional(),
    location: Location.optional(),
    context: FreeObject.optional(),
    metadata: FreeObject.optional(),
    context_sensitivity: ContextSensitivity.optional(),
    send_at: ZonedDateTime.optional(),
    timezone: TimezoneName.optional(),
  })
  .strict();
export type SendMessageBody = z.infer<typeof SendMessageBody>;

/**
 * Whether a message carries something: a non-empty body, media or a location. An empty body is
 * no body. Sends need it, the sandbox's inbound and phone-send bodies too, and the AI trigger
 * skips an inbound message without it.
 */
export function hasContent(m: { body?: string | null; media?: unknown; location?: unknown }): boolean {
  return (m.body != null && m.body.length > 0) || m.media != null || m.location != null;
}

// Optional for the server (docs/decisions.md, "Messaging": a send without it is accepted, not deduplicated); the SDK
// always sends one. 1-255 printable ASCII characters.
const IDEMPOTENCY_KEY_RULE = "must be 1-255 printable ASCII characters (U+0020 to U+007E)";
export const SendMessageHeaders = z.object({
  "idempotency-key": chars(1, 255, { errorMap: () => ({ message: IDEMPOTENCY_KEY_RULE }) })
    .regex(/^[\x20-\x7E]+$/)
    .optional(),
});
export type SendMessageHeaders = z.infer<typeof SendMessageHeaders>;

export const RescheduleBody = z.object({ send_at: ZonedDateTime, timezone: TimezoneName.optional() }).strict();
export type RescheduleBody = z.infer<typeof RescheduleBody>;

// Query strings arrive as strings: integers are queryInteger (coerced, one message naming the range).
export const ListMessagesQuery = z
  .object({
    limit: queryInteger(1, 100).default(25),
    cursor: chars(0, 200).optional(),
    connection: ConnectionRef.optional(),
    status: MessageStatus.optional(),
    direction: Direction.optional(),
    chat: ChatAddress.optional().describe("Only the messages of this chat, as the chat list names it; with `connection`, one conversation"),
  })
  .strict();
export type ListMessagesQuery = z.infer<typeof ListMessagesQuery>;

export const ExportMessagesQuery = z
  .object({
    connection: ConnectionRef.optional(),
    // Spec 4.1 gives this one as "string 1-20" (limits table: "status filter 1-20 characters"),
    // where the list's is "a message status": any such string is accepted, and one that is not a
    // status matches no rows (docs/decisions.md, "Validation messages and character counts").
    status: chars(1, 20)
      .describe(`A message status (${MESSAGE_STATUSES.join(", ")}). Any string of 1-20 characters is accepted; one that is not a status matches no rows.`)
      .optional(),
    direction: Direction.optional(),
    days: queryInteger(1, 365).default(30),
  })
  .strict();
export type ExportMessagesQuery = z.infer<typeof ExportMessagesQuery>;

export const NumberCheckQuery = z.object({ phone: Phone, connection: ConnectionRef }).strict();
export type NumberCheckQuery = z.infer<typeof NumberCheckQuery>;

// ---- responses (not strict: clients must tolerate fields added later) ----

/** Attachment as stored: absent optional parts are `null`, no length limits (inbound comes from the network). */
export const MessageMedia = z.object({
  url: z.string(),
  kind: MediaKind.nullable(),
  mimetype: z.string().nullable(),
  filename: z.string().nullable(),
});
export type MessageMedia = z.infer<typeof MessageMedia>;

export const MessageLocation = z.object({ latitude: z.number(), longitude: z.number(), title: z.string().nullable() });
export type MessageLocation = z.infer<typeof MessageLocation>;

/** A poll as the message shows it: its question, each option with its votes, how many a voter may pick. */
export const MessagePoll = z.object({
  question: z.string(),
  options: z.array(z.object({ name: z.string(), votes: z.number().int() })),
  selectable: z.number().int(),
});
export type MessagePoll = z.infer<typeof MessagePoll>;

export const Message = z.object({
  id: z.string().describe("Identifier with prefix `msg_`"),
  object: z.literal("message"),
  connection: z.string().describe("Slug of the connection"),
  direction: Direction,
  status: MessageStatus,
  // Outbound: the recipient as sent. Inbound: the linked number that received it, or `{group}`.
  to: z.union([z.string(), z.object({ phone: z.string() }), z.object({ group: z.string() })]),
  from: z.string().nullable().describe("Sender address: the remote party for inbound, the linked number (when known) for outbound"),
  body: z.string().nullable(),
  media: MessageMedia.nullable(),
  location: MessageLocation.nullable(),
  context: FreeObject,
  metadata: FreeObject,
  context_sensitivity: ContextSensitivity,
  send_at: Timestamp.nullable(),
  timezone: z.string().nullable(),
  provider_message_id: z.string().nullable(),
  reply_to: z.string().nullable().describe("Our id of the message this one quotes"),
  reactions: z.record(z.string(), z.number().int()).describe("Emoji → how many reacted with it (ours included)"),
  edited_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable().describe("When it was deleted for everyone; the record and its timeline stay"),
  poll: MessagePoll.nullable(),
  error: ErrorInfo.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Message = z.infer<typeof Message>;

export const TimelineEntry = z.object({ status: MessageStatus, at: Timestamp, detail: z.string().nullable() });
export type TimelineEntry = z.infer<typeof TimelineEntry>;

export const MessageWithTimeline = Message.extend({ timeline: z.array(TimelineEntry) });
export type MessageWithTimeline = z.infer<typeof MessageWithTimeline>;

export const MessagePage = page(Message);
export type MessagePage = z.infer<typeof MessagePage>;

export const NumberCheck = z.object({
  phone: z.string(),
  checked: z.boolean().describe("false when the engine cannot say; send anyway"),
  on_network: z.boolean().nullable().describe("null when checked is false"),
});
export type NumberCheck = z.infer<typeof NumberCheck>;

const read = { security: { auth: "key", scope: "messages:read" }, tag: "Messages" } satisfies RouteMetadata;
const write = { security: { auth: "key", scope: "messages:write" }, tag: "Messages" } satisfies RouteMetadata;
// The list, one message and the export are also the dashboard's (README.md, "The dashboard"): any member reads them.
const readBySession = { security: { auth: "key_or_session", scope: "messages:read" }, tag: "Messages" } satisfies RouteMetadata;
// Sending too, so a new user sends from the dashboard: a session whose role may grant messages:write
// (owner, admin, developer), under every rule a key's send meets (docs/decisions.md).
const sendBySession = { security: { auth: "key_or_session", scope: "messages:write" }, tag: "Messages" } satisfies RouteMetadata;

export const messages = c.router(
  {
    send: {
      method: "POST",
      path: "/v1/messages/text",
      summary: "Send a message",
      description:
        "Stores and queues a message. 202 means accepted and queued, not delivered: follow `status`. " +
        "With `send_at` the message waits as `scheduled` (needs a plan with scheduling). " +
        "Replaying an Idempotency-Key with the same body returns the original response. " +
        "The dashboard's session may send too when the member's role may grant messages:write.",
      headers: SendMessageHeaders,
      body: SendMessageBody,
      responses: { 202: Message, ...problems(400, 401, 402, 403, 409, 422, 429) },
      metadata: sendBySession,
    },
    list: {
      method: "GET",
      path: "/v1/messages",
      summary: "List messages",
      description: "Newest first, cursor-paginated; `next_cursor` is null on the last page.",
      query: ListMessagesQuery,
      responses: { 200: MessagePage, ...problems(400, 401, 403, 429) },
      metadata: readBySession,
    },
    // Declared before `get` so that a router registering in order never reads "export" as an id.
    export: {
      method: "GET",
      path: "/v1/messages/export",
      summary: "Export messages as CSV",
      description: "Streams one row per message of the last `days` days. Message bodies are never exported.",
      query: ExportMessagesQuery,
      responses: { 200: c.otherResponse({ contentType: "text/csv", body: z.string() }), ...problems(400, 401, 403, 429) },
      metadata: readBySession,
    },
    get: {
      method: "GET",
      path: "/v1/messages/:id",
      summary: "Retrieve a message",
      description: "The message with its delivery timeline.",
      pathParams: IdParams,
      responses: { 200: MessageWithTimeline, ...problems(400, 401, 403, 404, 429) },
      metadata: readBySession,
    },
    cancel: {
      method: "POST",
      path: "/v1/messages/:id/cancel",
      summary: "Cancel a message",
      description: "Only before hand-off to the provider (scheduled, accepted, queued); 409 afterwards.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 200: Message, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    reschedule: {
      method: "POST",
      path: "/v1/messages/:id/reschedule",
      summary: "Reschedule a scheduled message",
      description: "Only while the message is `scheduled`; 409 otherwise.",
      pathParams: IdParams,
      body: RescheduleBody,
      responses: { 200: Message, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    checkNumber: {
      method: "GET",
      path: "/v1/numbers/check",
      summary: "Check whether a number is on the network",
      description: "`checked: false` means the engine cannot say; send anyway.",
      query: NumberCheckQuery,
      responses: { 200: NumberCheck, ...problems(400, 401, 403, 404, 429) },
      metadata: read,
    },
  },
  { strictStatusCodes: true },
);
