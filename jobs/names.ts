// Every job's name and payload, in one module that imports nothing of the gateway: the code that
// queues a job (server/) and the code that runs it (jobs/) both take them from here, so neither
// side imports the other to agree on a string.
import { z } from "zod";

export const MESSAGE_RELEASE_JOB = "message.release";
export const CONNECTION_PURGE_JOB = "connection.purge";
export const WEBHOOK_RETRY_JOB = "webhook.retry";
/** Hourly: every table that only grows, kept bounded (jobs/prune.ts). */
export const PRUNE_JOB = "tables.prune";
/** Recurring jobs of earlier versions, removed from the backend at start. */
export const RETIRED_JOBS = [
  "webhooks.prune", "idempotency.prune", "oauth.prune", "rate-limits.prune", "messages.sweep-scheduled", "ai.sweep",
  // schedules are fired by a loop of every process now (server/schedules/firing.ts)
  ...[0, 1, 2, 3].map((lane) => `schedules.fire-due.${lane}`),
];
/** An AI run of one (connection, contact), at its debounce row's due time (server/ai/runs/runner.ts). */
export const AI_RUN_JOB = "ai.run";

/** The jobs written to the job outbox (server/db/job-outbox.ts) and relayed to Agenda (jobs/outbox.ts). */
export type JobName = typeof MESSAGE_RELEASE_JOB | typeof WEBHOOK_RETRY_JOB | typeof AI_RUN_JOB | typeof CONNECTION_PURGE_JOB;

/** Payloads, validated by the job when it runs (Agenda stores them as JSON). */
export const MessageReleasePayload = z.object({ message_id: z.string().min(1) });
export const ConnectionPurgePayload = z.object({ connection_id: z.string().min(1) });
export const WebhookRetryPayload = z.object({ delivery_id: z.string().min(1).max(64) });

export const AiRunPayload = z.object({ connection_id: z.string().min(1), contact: z.string().min(1) });

export type AiRunPayload = z.infer<typeof AiRunPayload>;
export type MessageReleasePayload = z.infer<typeof MessageReleasePayload>;
export type ConnectionPurgePayload = z.infer<typeof ConnectionPurgePayload>;
export type WebhookRetryPayload = z.infer<typeof WebhookRetryPayload>;
