// Webhook endpoints (docs/webhooks.md). Bodies are `.strict()`:
// unknown fields are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionRef, ErrorInfo, IdParams, MessageStatus, NoBody, Timestamp, list, page, problems, queryInteger, type RouteMetadata, chars } from "./common.js";
import { Schedule } from "./schedules.js";

const c = initContract();

/** Every event a webhook endpoint can subscribe to (docs/webhooks.md). */
export const WEBHOOK_EVENTS = [
  "message.received",
  "message.queued",
  "message.sent",
  "message.delivered",
  "message.read",
  "message.failed",
  "message.canceled",
  "message.reaction",
  "message.edited",
  "message.revoked",
  "message.poll_vote",
  "chat.presence",
  "connection.connected",
  "connection.disconnected",
  "connection.suspended",
  "connection.restricted",
  "schedule.fired",
  "schedule.completed",
  "ai.draft.created",
  "ai.reply.sent",
  "group.joined",
  "group.updated",
  "group.participants",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** `data` of `schedule.fired`: the schedule, the occurrence and the message it sent (or why not). */
export const ScheduleFiredData = z.object({
  schedule: Schedule,
  occurrence_at: Timestamp,
  message_id: z.string().nullable(),
  message_status: MessageStatus.nullable(),
  error: ErrorInfo.nullable(),
});
export type ScheduleFiredData = z.infer<typeof ScheduleFiredData>;

/** `data` of `schedule.completed`. */
export const ScheduleCompletedData = z.object({ schedule: Schedule });
export type ScheduleCompletedData = z.infer<typeof ScheduleCompletedData>;

/** `data` of `ai.draft.created`: the draft lives only here, never in the runs' record. */
export const AiDraftCreatedData = z.object({
  run_id: z.string().describe("The AI run (`airun_…`)"),
  message_id: z.string().describe("The inbound message the draft answers"),
  contact: z.string().describe("The contact's number"),
  text: z.string().describe("The draft reply"),
});
export type AiDraftCreatedData = z.infer<typeof AiDraftCreatedData>;

/** `data` of `ai.reply.sent`: the reply is an ordinary message, sent with `metadata.ai_run_id`. */
export const AiReplySentData = z.object({
  run_id: z.string().describe("The AI run (`airun_…`)"),
  message_id: z.string().describe("The inbound message the reply answers"),
  reply_message_id: z.string().describe("The reply (`msg_…`), queued through the ordinary send path"),
  contact: z.string().describe("The contact's number"),
});
export type AiReplySentData = z.infer<typeof AiReplySentData>;

/** `data` of `message.reaction`: `emoji` is "" when the reaction was removed. */
export const MessageReactionData = z.object({ message_id: z.string(), from: z.string(), emoji: z.string() });
export type MessageReactionData = z.infer<typeof MessageReactionData>;

/** `data` of `message.edited` and `message.revoked`: the message (ours, `msg_…`) and who acted. */
export const MessageChangedData = z.object({ message_id: z.string(), from: z.string() });
export type MessageChangedData = z.infer<typeof MessageChangedData>;

/** `data` of `message.poll_vote`: the voter's current choice (names of options; empty when withdrawn). */
export const MessagePollVoteData = z.object({ message_id: z.string(), from: z.string(), options: z.array(z.string()) });
export type MessagePollVoteData = z.infer<typeof MessagePollVoteData>;

/** `data` of `chat.presence`: a contact typing, recording or pausing in a chat. */
export const ChatPresenceData = z.object({ chat: z.string(), from: z.string(), state: z.enum(["typing", "recording", "paused"]) });
export type ChatPresenceData = z.infer<typeof ChatPresenceData>;

export const CreateWebhookEndpointBody = z
  .object({
    url: chars().url().max(2048).describe("Publicly reachable https URL; private addresses are refused (400)"),
    description: chars(0, 200).optional(),
    // Not an enum on purpose: the server checks names against WEBHOOK_EVENTS and answers 400 naming
    // the unknown ones, which a schema enum would turn into an opaque validation error.
    events: z.array(chars(1, 100)).min(1).max(32).describe(`Event names, one of: ${WEBHOOK_EVENTS.join(", ")}`),
    connection: ConnectionRef.optional().describe("Restrict the endpoint to one connection (plan-gated: 402)"),
  })
  .strict();
export type CreateWebhookEndpointBody = z.infer<typeof CreateWebhookEndpointBody>;

export const WebhookEndpoint = z.object({
  id: z.string().describe("Identifier with prefix `whe_`"),
  object: z.literal("webhook_endpoint"),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(z.string()),
  connection: z.string().nullable(),
  created_at: Timestamp,
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookEndpointCreated = WebhookEndpoint.extend({
  secret: z.string().describe("HMAC-SHA256 signing secret; returned only here, never again"),
});
export type WebhookEndpointCreated = z.infer<typeof WebhookEndpointCreated>;

export const WebhookEndpointList = list(WebhookEndpoint);
export type WebhookEndpointList = z.infer<typeof WebhookEndpointList>;

export const WEBHOOK_DELIVERY_STATUSES = ["pending", "succeeded", "failed", "canceled"] as const;
export const WebhookDeliveryStatus = z.enum(WEBHOOK_DELIVERY_STATUSES);
export type WebhookDeliveryStatus = z.infer<typeof WebhookDeliveryStatus>;

export const WebhookAttempt = z.object({
  attempted_at: Timestamp,
  trigger: z.enum(["initial", "retry", "manual"]).describe("The first attempt, a scheduled retry, or a resend"),
  status_code: z.number().int().nullable().describe("The receiver's HTTP status; null when no response arrived"),
  latency_ms: z.number().int(),
  error_code: z.string().nullable().describe("Null on success; `http_status`, `timeout`, `blocked`, `dns`, `connection_refused`, `tls`…"),
  error: z.string().nullable(),
});
export type WebhookAttempt = z.infer<typeof WebhookAttempt>;

export const WebhookDelivery = z.object({
  id: z.string().describe("Identifier with prefix `del_`"),
  object: z.literal("webhook_delivery"),
  endpoint_id: z.string(),
  event_id: z.string().describe("The `evt_…` id, also sent as `Svc-Event-Id`"),
  event_type: z.string(),
  status: WebhookDeliveryStatus.describe("`pending` until a 2xx (`succeeded`) or the retry schedule is exhausted (`failed`); `canceled` when the endpoint was deleted"),
  attempt_count: z.number().int(),
  next_attempt_at: Timestamp.nullable(),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
  attempts: z.array(WebhookAttempt).describe("Every attempt, oldest first"),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryPage = page(WebhookDelivery);
export type WebhookDeliveryPage = z.infer<typeof WebhookDeliveryPage>;

export const ListWebhookDeliveriesQuery = z
  .object({
    limit: queryInteger(1, 100).default(25),
    cursor: chars(0, 200).optional(),
    status: WebhookDeliveryStatus.optional(),
  })
  .strict();
export type ListWebhookDeliveriesQuery = z.infer<typeof ListWebhookDeliveriesQuery>;

export const WebhookDeliveryParams = z.object({ id: chars(1, 64), deliveryId: chars(1, 64) });

// Spec 4.4 marks session auth; 5.11 also lets a key with webhooks:write register its own endpoint.
// A session must also hold a role that may manage webhook endpoints (docs/webhooks.md).
const read = { security: { auth: "key_or_session", scope: "webhooks:read" }, tag: "Webhooks" } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "webhooks:write" }, tag: "Webhooks" } satisfies RouteMetadata;

export const webhooks = c.router(
  {
    create: {
      method: "POST",
      path: "/v1/webhook-endpoints",
      summary: "Register a webhook endpoint",
      description: "The signing `secret` is in this response only. Each create is audited.",
      body: CreateWebhookEndpointBody,
      responses: { 201: WebhookEndpointCreated, ...problems(400, 401, 402, 403, 404, 429) },
      metadata: write,
    },
    list: {
      method: "GET",
      path: "/v1/webhook-endpoints",
      summary: "List webhook endpoints",
      description: "Secrets are never listed.",
      responses: { 200: WebhookEndpointList, ...problems(401, 403, 429) },
      metadata: read,
    },
    delete: {
      method: "DELETE",
      path: "/v1/webhook-endpoints/:id",
      summary: "Delete a webhook endpoint",
      description: "Each delete is audited.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 429) },
      metadata: write,
    },
    listDeliveries: {
      method: "GET",
      path: "/v1/webhook-endpoints/:id/deliveries",
      summary: "List an endpoint's recent deliveries (extension)",
      description:
        "Beyond the specification: the endpoint's deliveries, newest first, each with every attempt (time, status code, latency, error). " +
        "Event payloads are not included. Deliveries are kept 30 days after they finish.",
      pathParams: IdParams,
      query: ListWebhookDeliveriesQuery,
      responses: { 200: WebhookDeliveryPage, ...problems(400, 401, 403, 404, 429) },
      metadata: read,
    },
    resendDelivery: {
      method: "POST",
      path: "/v1/webhook-endpoints/:id/deliveries/:deliveryId/resend",
      summary: "Re-send a delivery (extension)",
      description:
        "Beyond the specification: delivers the event to the endpoint again, now, with the same `Svc-Event-Id`; a failure is retried " +
        "on the retry schedule from its start. 409 while an attempt is in flight. Audited.",
      pathParams: WebhookDeliveryParams,
      body: c.noBody(),
      responses: { 202: WebhookDelivery, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
  },
  { strictStatusCodes: true },
);
