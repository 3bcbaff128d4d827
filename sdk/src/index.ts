// @svc/sdk: the typed client of svc-gateway, built from the same ts-rest contract as the server,
// plus the helpers every integration needs (idempotency, retries, typed errors, pagination,
// webhook signature verification).
export { createClient, type ClientOptions, type SvcClient, type SvcClientArgs } from "./client.js";
export {
  SvcApiError,
  expectOk,
  expectStatus,
  isProblem,
  parseRetryAfter,
  type AnyResponse,
  type OkBody,
  type OkResponse,
  type SuccessStatus,
} from "./errors.js";
export { IDEMPOTENCY_HEADER, newIdempotencyKey, requiresIdempotencyKey } from "./idempotency.js";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";
export { listAllMessages, paginate, type CursorPage, type ListAllMessagesQuery } from "./pagination.js";
export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  WebhookVerificationError,
  signWebhookPayload,
  verifyWebhook,
  type VerifyWebhookOptions,
  type WebhookEventPayload,
  type WebhookHeaders,
  type WebhookVerificationFailure,
} from "./webhooks.js";

// The contract and every schema and type in it (Message, Connection, Problem…).
export * from "../../contract/index.js";
