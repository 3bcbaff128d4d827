// Conversations (docs/conversations.md): the chats of a connection, and what people do in a
// chat besides sending: reply quoting a message, react, edit or revoke what we sent, mark read,
// show typing, open a contact's media, send a poll. Request bodies are `.strict()`, as everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionParams, ConnectionRef, Direction, IdParams, MessageStatus, NoBody, Timestamp, chars, page, problems, queryInteger, type RouteMetadata } from "./common.js";
import { ChatAddress, Location, Media, Message, Recipient, SendMessageHeaders } from "./messages.js";

const c = initContract();

/** The longest a message body may be (the spec's body limit, as a send's); an edit is held to it too. */
export const BODY_MAX = 4096;
/** How long after its hand-off our text can still be edited (the network's window). */
export const EDIT_WINDOW_MINUTES = 15;
/** How long after its hand-off our message can still be deleted for everyone (the network's window). */
export const REVOKE_WINDOW_HOURS = 48;
/** A poll's limits (docs/conversations.md). */
export const POLL_LIMITS = { question: 255, optionsMin: 2, optionsMax: 12, option: 100 } as const;
/** Typing or recording shown to a contact clears itself after this many seconds. */
export const PRESENCE_CLEARS_AFTER_S = 25;

export const ChatParams = ConnectionParams.extend({ chat: ChatAddress });
export type ChatParams = z.infer<typeof ChatParams>;

export const ListChatsQuery = z.object({ limit: queryInteger(1, 100).default(25), cursor: chars(0, 200).optional() }).strict();
export type ListChatsQuery = z.infer<typeof ListChatsQuery>;

export const Chat = z.object({
  object: z.literal("chat"),
  chat: z.string().describe("A contact (`+15550002222`, `lid:<digits>`) or a group (`group:<id>`)"),
  connection: z.string().describe("Slug of the connection"),
  last_message: z.object({ id: z.string(), direction: Direction, status: MessageStatus, at: Timestamp }),
  unread_count: z.number().int().describe("Inbound messages of the chat not yet marked read"),
});
export type Chat = z.infer<typeof Chat>;

export const ChatPage = page(Chat);
export type ChatPage = z.infer<typeof ChatPage>;

/** A reply: the content of a send; the connection and the chat are those of the quoted message. */
export const ReplyBody = z
  .object({
    body: chars(0, BODY_MAX).optional(),
    media: Media.optional(),
    location: Location.optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type ReplyBody = z.infer<typeof ReplyBody>;

/** One emoji, or "" to remove our reaction. Whether it is one emoji is the server's check (400 naming it). */
export const ReactionBody = z.object({ emoji: chars(0, 32).describe('One emoji; "" removes our reaction') }).strict();
export type ReactionBody = z.infer<typeof ReactionBody>;

export const EditBody = z.object({ body: chars(1, BODY_MAX) }).strict();
export type EditBody = z.infer<typeof EditBody>;

export const PresenceState = z.enum(["typing", "recording", "paused"]);
export type PresenceState = z.infer<typeof PresenceState>;

export const PresenceBody = z.object({ state: PresenceState }).strict();
export type PresenceBody = z.infer<typeof PresenceBody>;

export const PollBody = z
  .object({
    connection: ConnectionRef,
    to: Recipient,
    question: chars(1, POLL_LIMITS.question),
    options: z
      .array(chars(1, POLL_LIMITS.option))
      .min(POLL_LIMITS.optionsMin)
      .max(POLL_LIMITS.optionsMax)
      .refine((o) => new Set(o).size === o.length, { message: "options must be distinct" }),
    selectable: z.number().int().min(1).max(POLL_LIMITS.optionsMax).default(1).describe("How many options a voter may pick (1 to the number of options)"),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .refine((p) => p.selectable <= p.options.length, { message: "selectable must be at most the number of options", path: ["selectable"] });
export type PollBody = z.infer<typeof PollBody>;

/** What a reaction, edit or revoke answers: the message acted on, as it now stands. */
export const ActionAccepted = z.object({
  object: z.literal("message_action"),
  action: z.enum(["reaction", "edit", "revoke"]),
  message: Message,
});
export type ActionAccepted = z.infer<typeof ActionAccepted>;

export const ReadReceipt = z.object({
  object: z.literal("read_receipt"),
  message_id: z.string(),
  chat: z.string(),
  marked: z.number().int().describe("Inbound messages of the chat marked read by this call (this one and the earlier unread ones)"),
});
export type ReadReceipt = z.infer<typeof ReadReceipt>;

const read = { security: { auth: "key_or_session", scope: "messages:read" }, tag: "Conversations" } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "messages:write" }, tag: "Conversations" } satisfies RouteMetadata;

export const conversations = c.router(
  {
    listChats: {
      method: "GET",
      path: "/v1/connections/:connection/chats",
      summary: "List the chats of a connection (extension)",
      description: "Newest first by their last message, cursor-paginated, each with its unread inbound count.",
      pathParams: ConnectionParams,
      query: ListChatsQuery,
      responses: { 200: ChatPage, ...problems(400, 401, 403, 404, 429) },
      metadata: read,
    },
    reply: {
      method: "POST",
      path: "/v1/messages/:id/reply",
      summary: "Reply to a message, quoting it (extension)",
      description:
        "A new message in the chat of `{id}`, on its connection, quoting it; accepted like a send (the same limits, " +
        "durability and Idempotency-Key). 409 while the quoted message has no network id yet.",
      pathParams: IdParams,
      headers: SendMessageHeaders,
      body: ReplyBody,
      responses: { 202: Message, ...problems(400, 401, 402, 403, 404, 409, 422, 429) },
      metadata: write,
    },
    react: {
      method: "POST",
      path: "/v1/messages/:id/reactions",
      summary: "React to a message (extension)",
      description: 'One emoji; `""` removes our reaction. 409 while the message has no network id yet.',
      pathParams: IdParams,
      body: ReactionBody,
      responses: { 202: ActionAccepted, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    edit: {
      method: "POST",
      path: "/v1/messages/:id/edit",
      summary: "Edit a text we sent (extension)",
      description: `Only our own text message, once handed to the network, within ${EDIT_WINDOW_MINUTES} minutes of it; 409 otherwise, naming why.`,
      pathParams: IdParams,
      body: EditBody,
      responses: { 202: ActionAccepted, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    revoke: {
      method: "POST",
      path: "/v1/messages/:id/revoke",
      summary: "Delete a message we sent, for everyone (extension)",
      description: `Only our own message, within the network's window of ${REVOKE_WINDOW_HOURS} hours; 409 otherwise. The message keeps its record and timeline, with \`revoked_at\`.`,
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 202: ActionAccepted, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    markRead: {
      method: "POST",
      path: "/v1/messages/:id/read",
      summary: "Mark a chat read up to a message (extension)",
      description: "That inbound message and the earlier unread inbound ones of its chat are marked read, on the network too.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 200: ReadReceipt, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    presence: {
      method: "POST",
      path: "/v1/connections/:connection/chats/:chat/presence",
      summary: "Show typing or recording in a chat (extension)",
      description: `\`typing\` and \`recording\` clear themselves after ${PRESENCE_CLEARS_AFTER_S} s; \`paused\` clears them now. 409 when the connection is not connected.`,
      pathParams: ChatParams,
      body: PresenceBody,
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    media: {
      method: "GET",
      path: "/v1/messages/:id/media",
      summary: "Download a message's media (extension)",
      description:
        "The media bytes, streamed with their type and file name, fetched (and decrypted) from the network on demand and never stored. " +
        "404 when the message has none; 410 when the network no longer has it; 413 when it is larger than MEDIA_MAX_BYTES.",
      pathParams: IdParams,
      responses: { 200: c.otherResponse({ contentType: "application/octet-stream", body: z.string() }), ...problems(400, 401, 403, 404, 409, 410, 413, 429) },
      metadata: read,
    },
    poll: {
      method: "POST",
      path: "/v1/messages/poll",
      summary: "Send a poll (extension)",
      description: "Accepted like a send (the same rules, durability and Idempotency-Key); votes arrive as `message.poll_vote` events and tallies on the message's `poll`.",
      headers: SendMessageHeaders,
      body: PollBody,
      responses: { 202: Message, ...problems(400, 401, 402, 403, 409, 422, 429) },
      metadata: write,
    },
  },
  { strictStatusCodes: true },
);
