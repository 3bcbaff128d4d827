// The body of each webhook event, typed by its `type` (docs/webhooks.md): `data` is the resource
// as the API shows it. Narrow on `event.type` and `event.data` follows.
import type {
  AiDraftCreatedData,
  AiReplySentData,
  ChatPresenceData,
  Connection,
  Group,
  GroupParticipantsData,
  GroupUpdatedData,
  Message,
  MessageChangedData,
  MessagePollVoteData,
  MessageReactionData,
  ScheduleCompletedData,
  ScheduleFiredData,
  WebhookEvent,
} from "./types.gen.js";

/** `data` of each event type. */
export interface WebhookEventDataMap {
  "message.received": Message;
  "message.queued": Message;
  "message.sent": Message;
  "message.delivered": Message;
  "message.read": Message;
  "message.failed": Message;
  "message.canceled": Message;
  "message.reaction": MessageReactionData;
  "message.edited": MessageChangedData;
  "message.revoked": MessageChangedData;
  "message.poll_vote": MessagePollVoteData;
  "chat.presence": ChatPresenceData;
  "connection.connected": Connection;
  "connection.disconnected": Connection;
  "connection.suspended": Connection;
  "connection.restricted": Connection;
  "schedule.fired": ScheduleFiredData;
  "schedule.completed": ScheduleCompletedData;
  "ai.draft.created": AiDraftCreatedData;
  "ai.reply.sent": AiReplySentData;
  "group.joined": Group;
  "group.updated": GroupUpdatedData;
  "group.participants": GroupParticipantsData;
}

/** One delivery's body; with `T` left out, the union of every event type, discriminated by `type`. */
export type WebhookEventPayload<T extends WebhookEvent = WebhookEvent> = {
  [K in T]: {
    /** `evt_…`; deliveries are at least once, so deduplicate on it. */
    id: string;
    type: K;
    created_at: string;
    /** Slug of the connection the event concerns. */
    connection: string;
    data: WebhookEventDataMap[K];
  };
}[T];
