// Operational routes that live in the contract (docs/engines.md, "The callback wire format"): the OpenAPI document and the transport
// callback. /healthz, /readyz, /metrics and /.well-known/* are served outside ts-rest.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { FreeObject, ZonedDateTime, problems, type RouteMetadata, chars } from "./common.js";
import { Location, Media } from "./messages.js";

const c = initContract();

const Phone = chars(5, 40);
// The dedupe key: a redelivered event with a seen event_id is acknowledged and ignored.
const EventId = chars(1, 200);

export const ProviderCallbackParams = z.object({
  providerName: chars(1, 40).describe("Engine name, e.g. `sandbox`"),
  token: chars(1, 200).describe("The connection's callback_token"),
});
export type ProviderCallbackParams = z.infer<typeof ProviderCallbackParams>;

// The payload is ours to define (not shown): engines translate their native events into
// these three. Strict like every body: an engine sending unknown fields is a bug to surface.
export const ConnectionStateEvent = z
  .object({
    type: z.literal("connection.state"),
    event_id: EventId,
    state: z.enum(["connected", "disconnected"]),
    phone: Phone.optional().describe("The linked number, when connected"),
    detail: chars(1, 100)
      .optional()
      .describe("Why the connection is not connected, e.g. `replaced_elsewhere`, `client_version_refused`, `passkey_required`"),
    still_linked: z
      .boolean()
      .optional()
      .describe("With `disconnected`: the device link survives (the engine keeps its session), so resume reopens it without pairing"),
  })
  .strict();
export type ConnectionStateEvent = z.infer<typeof ConnectionStateEvent>;

/**
 * The network restricted the account (it will not let the number start chats or send for a while),
 * or lifted the restriction. While it holds, the connection's messages stay queued.
 */
export const ConnectionRestrictionEvent = z
  .object({
    type: z.literal("connection.restriction"),
    event_id: EventId,
    active: z.boolean().describe("true: restricted now; false: the restriction was lifted"),
    until: ZonedDateTime
      .nullable()
      .optional()
      .describe("With `active`: when the network says the restriction ends (sending resumes by itself then); absent or null: until it reports it lifted"),
  })
  .strict();
export type ConnectionRestrictionEvent = z.infer<typeof ConnectionRestrictionEvent>;

/** What the network reports of a message it carried: its id and content, inbound or written on the phone. */
const ReportedMessage = z.object({
  event_id: EventId,
  provider_message_id: chars(1, 200),
  to: Phone.optional(),
  group: Phone.optional(),
  body: chars(0, 4096).optional(),
  media: Media.optional(),
  location: Location.optional(),
  timestamp: ZonedDateTime,
});

export const InboundMessageEvent = z
  .object({
    type: z.literal("message.inbound"),
    from: Phone.describe("The sender's phone number where the network knows it, else `lid:<digits>` (a valid `to` for the reply)"),
    from_lid: Phone.optional().describe("The sender's LID, `lid:<digits>`, when the network addressed them by one"),
  })
  .merge(ReportedMessage)
  .strict();
export type InboundMessageEvent = z.infer<typeof InboundMessageEvent>;

export const MessageStatusEvent = z
  .object({
    type: z.literal("message.status"),
    event_id: EventId,
    message_id: chars(1, 64).describe("Our message id"),
    provider_message_id: chars(1, 200).optional(),
    status: z.enum(["sent", "delivered", "read", "failed"]),
    error: z.object({ code: chars(1, 100), message: chars(0, 1000) }).strict().optional(),
    participant: chars(1, 40)
      .optional()
      .describe("A group message's receipt: the member it is from (a phone number, or `lid:<digits>`); each member's receipt is kept in the timeline"),
    timestamp: ZonedDateTime,
  })
  .strict();
export type MessageStatusEvent = z.infer<typeof MessageStatusEvent>;

// A message the person holding the linked phone wrote from the phone itself: the gateway records
// it as an outbound message it did not send (a later assistant leaves such conversations to them).
export const PhoneOutboundEvent = z
  .object({ type: z.literal("message.outbound_from_phone") })
  .merge(ReportedMessage)
  .strict()
  .describe("One of `to` (a phone number) or `group`; with both, the group");
export type PhoneOutboundEvent = z.infer<typeof PhoneOutboundEvent>;

const ReportedParticipant = z.object({ phone: Phone.nullable(), lid: chars(1, 200).nullable() }).strict();

/** A group's metadata as the network now has it: the number is in it (joined, or it changed). */
export const GroupMetadataEvent = z
  .object({
    type: z.literal("group.metadata"),
    event_id: EventId,
    group: z
      .object({
        id: chars(1, 64),
        subject: chars(0, 200),
        description: chars(0, 4096).nullable(),
        announce: z.boolean(),
        locked: z.boolean(),
        created_at: ZonedDateTime,
        participants: z.array(ReportedParticipant.extend({ role: z.enum(["member", "admin", "superadmin"]) }).strict()).max(5000),
      })
      .strict(),
  })
  .strict();
export type GroupMetadataEvent = z.infer<typeof GroupMetadataEvent>;

/** Participants of a group joined, left, were promoted or demoted (the linked number among them when it left). */
export const GroupParticipantsEvent = z
  .object({
    type: z.literal("group.participants"),
    event_id: EventId,
    group_id: chars(1, 64),
    action: z.enum(["add", "remove", "promote", "demote"]),
    participants: z.array(ReportedParticipant).min(1).max(5000),
  })
  .strict();
export type GroupParticipantsEvent = z.infer<typeof GroupParticipantsEvent>;
/** What a contact did to a message the network carried: the message by the network's id. */
const ActedOnMessage = z.object({
  event_id: EventId,
  provider_message_id: chars(1, 200).describe("The network's id of the message acted on"),
  from: Phone.describe("Who acted"),
  timestamp: ZonedDateTime,
});

export const ReactionEvent = z
  .object({ type: z.literal("message.reaction"), emoji: chars(0, 32).describe('The emoji; "" when the reaction was removed') })
  .merge(ActedOnMessage)
  .strict();
export type ReactionEvent = z.infer<typeof ReactionEvent>;

export const EditedEvent = z.object({ type: z.literal("message.edited"), body: chars(0, 4096) }).merge(ActedOnMessage).strict();
export type EditedEvent = z.infer<typeof EditedEvent>;

export const RevokedEvent = z.object({ type: z.literal("message.revoked") }).merge(ActedOnMessage).strict();
export type RevokedEvent = z.infer<typeof RevokedEvent>;

export const PollVoteEvent = z
  .object({ type: z.literal("message.poll_vote"), options: z.array(chars(1, 100)).max(12).describe("The voter's current choice, by option name; empty when withdrawn") })
  .merge(ActedOnMessage)
  .strict();
export type PollVoteEvent = z.infer<typeof PollVoteEvent>;

export const PresenceEvent = z
  .object({
    type: z.literal("chat.presence"),
    event_id: EventId,
    from: Phone,
    group: Phone.optional().describe("The group it happens in; absent in a one-to-one chat"),
    state: z.enum(["typing", "recording", "paused"]),
    timestamp: ZonedDateTime,
  })
  .strict();
export type PresenceEvent = z.infer<typeof PresenceEvent>;

/** The reports of what happens in a chat besides messages (docs/conversations.md). */
export type ConversationEvent = ReactionEvent | EditedEvent | RevokedEvent | PollVoteEvent | PresenceEvent;

export const ProviderEvent = z.discriminatedUnion("type", [
  ConnectionStateEvent,
  ConnectionRestrictionEvent,
  InboundMessageEvent,
  MessageStatusEvent,
  PhoneOutboundEvent,
  GroupMetadataEvent,
  GroupParticipantsEvent,
  ReactionEvent,
  EditedEvent,
  RevokedEvent,
  PollVoteEvent,
  PresenceEvent,
]);
export type ProviderEvent = z.infer<typeof ProviderEvent>;

/** Most events in one callback. */
export const MAX_PROVIDER_EVENTS = 500;

/** Several events in one callback, applied in order in one transaction. */
export const ProviderEventBatch = z
  .object({ events: z.array(ProviderEvent).min(1).max(MAX_PROVIDER_EVENTS) })
  .strict()
  .describe("Several events, applied in their order, all or none: one request and one transaction for a burst of receipts");
export type ProviderEventBatch = z.infer<typeof ProviderEventBatch>;

export const ProviderCallbackBody = z.union([ProviderEvent, ProviderEventBatch]);
export type ProviderCallbackBody = z.infer<typeof ProviderCallbackBody>;

export const ProviderCallbackAck = z.object({
  accepted: z.boolean().describe("false when every event was ignored (duplicates, or nothing to do)"),
});
export type ProviderCallbackAck = z.infer<typeof ProviderCallbackAck>;

/** The OpenAPI document itself; its shape is OpenAPI 3.1, not restated here. */
export const OpenApiDocument = FreeObject.describe("OpenAPI 3.1.0 document");

export const ops = c.router(
  {
    openapi: {
      method: "GET",
      path: "/v1/openapi.json",
      summary: "This API description (OpenAPI 3.1.0)",
      responses: { 200: OpenApiDocument },
      metadata: { security: { auth: "none" }, tag: "Operational" } satisfies RouteMetadata,
    },
    providerCallback: {
      method: "POST",
      path: "/v1/provider/:providerName/:token",
      summary: "Transport callback",
      description:
        "Called by the transport engine; authenticated only by the connection's callback token in the path. " +
        "The body is one event, or `{\"events\": [...]}` with up to 500 applied in order in one transaction. " +
        "202 whether the events were handled or ignored; redeliveries (same `event_id`) are deduplicated. " +
        "The token is checked before the body: 404 for an unknown provider or token, whatever the body. " +
        "A payload that is not in this format is ignored (202, `accepted: false`), never refused.",
      pathParams: ProviderCallbackParams,
      body: ProviderCallbackBody,
      responses: { 202: ProviderCallbackAck, ...problems(404, 413) },
      metadata: { security: { auth: "none" }, tag: "Operational" } satisfies RouteMetadata,
    },
  },
  { strictStatusCodes: true },
);
