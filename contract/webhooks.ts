// Webhook endpoints (spec 2.4, 4.4, 5.11, 6; catalogue from product.md). Bodies are `.strict()`:
// unknown fields are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionRef, IdParams, NoBody, Timestamp, list, problems, type RouteMetadata } from "./common.js";

const c = initContract();

/** Every event a webhook endpoint can subscribe to (product.md). */
export const WEBHOOK_EVENTS = [
  "message.received",
  "message.queued",
  "message.sent",
  "message.delivered",
  "message.read",
  "message.failed",
  "message.canceled",
  "connection.connected",
  "connection.disconnected",
  "connection.suspended",
  "schedule.fired",
  "schedule.completed",
  "ai.draft.created",
  "ai.reply.sent",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const CreateWebhookEndpointBody = z
  .object({
    url: z.string().url().max(2048).describe("Publicly reachable https URL; private addresses are refused (400)"),
    description: z.string().max(200).optional(),
    // Not an enum on purpose: the server checks names against WEBHOOK_EVENTS and answers 400 naming
    // the unknown ones, which a schema enum would turn into an opaque validation error.
    events: z.array(z.string().min(1).max(100)).min(1).max(32).describe(`Event names, one of: ${WEBHOOK_EVENTS.join(", ")}`),
    connection: ConnectionRef.optional().describe("Restrict the endpoint to one connection (plan-gated: 402)"),
  })
  .strict();
export type CreateWebhookEndpointBody = z.infer<typeof CreateWebhookEndpointBody>;

export const WebhookEndpoint = z.object({
  id: z.string().describe("Identifier with prefix `we_`"),
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

// Spec 4.4 marks session auth; 5.11 also lets a key with webhooks:write register its own endpoint.
const read = { security: { auth: "key_or_session", scope: "webhooks:read" }, tag: "Webhooks", notImplemented: true } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "webhooks:write" }, tag: "Webhooks", notImplemented: true } satisfies RouteMetadata;

export const webhooks = c.router(
  {
    create: {
      method: "POST",
      path: "/v1/webhook-endpoints",
      summary: "Register a webhook endpoint",
      description: "The signing `secret` is in this response only. Each create is audited.",
      body: CreateWebhookEndpointBody,
      responses: { 201: WebhookEndpointCreated, ...problems(400, 401, 402, 403, 429, 501) },
      metadata: write,
    },
    list: {
      method: "GET",
      path: "/v1/webhook-endpoints",
      summary: "List webhook endpoints",
      description: "Secrets are never listed.",
      responses: { 200: WebhookEndpointList, ...problems(401, 403, 429, 501) },
      metadata: read,
    },
    delete: {
      method: "DELETE",
      path: "/v1/webhook-endpoints/:id",
      summary: "Delete a webhook endpoint",
      description: "Each delete is audited.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 429, 501) },
      metadata: write,
    },
  },
  { strictStatusCodes: true },
);
