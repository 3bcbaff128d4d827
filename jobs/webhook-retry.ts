// Webhook retries (docs/webhooks.md): the statement that records a failed attempt sets the
// delivery's next attempt time and writes a `webhook.retry` job for that moment into the job
// outbox (jobs/outbox.ts relays it). The job only names the delivery; the row decides: a delivery
// that succeeded, was resent or was canceled meanwhile is left alone. Agenda delivers at least
// once and the claim makes a second run a no-op.
import type { WebhookDeliverer } from "../server/webhooks/delivery.js";
import { WEBHOOK_RETRY_JOB, WebhookRetryPayload } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function webhookRetryJob(deliverer: WebhookDeliverer): JobDefinition<unknown> {
  return {
    name: WEBHOOK_RETRY_JOB,
    concurrency: 20,
    // Longer than one attempt (at most 10 s) and its bookkeeping.
    lockLifetimeMs: 60_000,
    removeOnComplete: true,
    async run(data) {
      const { delivery_id } = WebhookRetryPayload.parse(data);
      await deliverer.attemptDue(delivery_id);
    },
  };
}

