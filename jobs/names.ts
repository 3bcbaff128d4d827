// Every job's name and payload, in one module that imports nothing of the gateway: the code that
// queues a job (server/) and the code that runs it (jobs/) both take them from here, so neither
// side imports the other to agree on a string.
import { z } from "zod";

export const MESSAGE_RELEASE_JOB = "message.release";
export const MESSAGES_SWEEP_JOB = "messages.sweep-scheduled";
export const CONNECTION_PURGE_JOB = "connection.purge";
export const WEBHOOK_RETRY_JOB = "webhook.retry";
export const WEBHOOK_PRUNE_JOB = "webhooks.prune";
export const IDEMPOTENCY_PRUNE_JOB = "idempotency.prune";
export const OAUTH_PRUNE_JOB = "oauth.prune";
export const RATE_LIMIT_PRUNE_JOB = "rate-limits.prune";
export const EVENTS_PRUNE_JOB = "events.prune";
/** An AI run of one (connection, contact), at its debounce row's due time (server/ai/runs.ts). */
export const AI_RUN_JOB = "ai.run";
/** Finds debounce rows whose job was lost and runs whose process died. */
export const AI_SWEEP_JOB = "ai.sweep";

/** Recurring schedule-firing lanes, one job name each (jobs/schedule-fire.ts). */
export function scheduleFireJobName(lane: number): string {
  return `schedules.fire-due.${lane}`;
}

/** Payloads, validated by the job when it runs (Agenda stores them as JSON). */
export const MessageReleasePayload = z.object({ message_id: z.string().min(1) });
export const ConnectionPurgePayload = z.object({ connection_id: z.string().min(1) });
export const WebhookRetryPayload = z.object({ delivery_id: z.string().min(1).max(64) });

export const AiRunPayload = z.object({ connection_id: z.string().min(1), contact: z.string().min(1) });

export type AiRunPayload = z.infer<typeof AiRunPayload>;
export type MessageReleasePayload = z.infer<typeof MessageReleasePayload>;
export type ConnectionPurgePayload = z.infer<typeof ConnectionPurgePayload>;
export type WebhookRetryPayload = z.infer<typeof WebhookRetryPayload>;
