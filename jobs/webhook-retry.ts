// Webhook retries (docs/webhooks.md): after a failed attempt the delivery row records its next attempt
// time and a `webhook.retry` job is scheduled for that moment. The job only names the delivery;
// the row decides: a delivery that succeeded, was resent or was canceled meanwhile, or that the
// worker loop already took, is left alone. Agenda delivers at least once and the claim makes a
// second run a no-op; a job that was never created is covered by the worker loop, which takes any
// retry more than a minute overdue (server/webhooks/delivery.ts).
import type { AppContext } from "../server/context.js";
import { WEBHOOK_RETRY_JOB, WebhookRetryPayload } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function webhookRetryJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: WEBHOOK_RETRY_JOB,
    concurrency: 20,
    // Longer than one attempt (at most 10 s) and its bookkeeping.
    lockLifetimeMs: 60_000,
    removeOnComplete: true,
    async run(data) {
      const { delivery_id } = WebhookRetryPayload.parse(data);
      await ctx.services.webhookDeliverer.attemptDue(delivery_id);
    },
  };
}

