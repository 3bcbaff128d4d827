// @svc/sdk: the typed client of svc-gateway, built from the same ts-rest contract as the server,
// plus the helpers every integration needs (idempotency, retries, timeouts, typed errors,
// pagination, webhook signature verification). Its types are plain TypeScript generated from the
// contract (types.gen.ts); the contract itself, with its zod schemas, is `@svc/sdk/contract`.
export { createClient, DEFAULT_TIMEOUT_MS, type CallOptions, type ClientOptions, type SvcClient } from "./client.js";
export {
  SvcApiError,
  SvcConnectionError,
  expectOk,
  expectStatus,
  isProblem,
  parseRetryAfter,
  type AnyResponse,
  type OkBody,
  type OkResponse,
  type SuccessStatus,
  type SvcErrorCode,
} from "./errors.js";
export { IDEMPOTENCY_HEADER, newIdempotencyKey, requiresIdempotencyKey } from "./idempotency.js";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";
export {
  autoPaginate,
  eventPages,
  listAllEvents,
  listAllMessages,
  listAllWebhookDeliveries,
  paginate,
  type AutoPaginateArgs,
  type CursorPage,
  type EventPagesQuery,
  type ListAllMessagesQuery,
  type ListAllWebhookDeliveriesQuery,
} from "./pagination.js";
export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  WebhookVerificationError,
  signWebhookPayload,
  verifyWebhook,
  type VerifyWebhookOptions,
  type WebhookEventDataMap,
  type WebhookEventPayload,
  type WebhookHeaders,
  type WebhookVerificationFailure,
} from "./webhooks.js";

// Every resource, request and enum type of the API (Message, Connection, Problem, ProblemCode…).
export type * from "./types.gen.js";
