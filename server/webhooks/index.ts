// The webhooks folder as the composition root builds it: endpoints, the deliverer (its worker
// loop makes first attempts; `webhook.retry` jobs the retries), the fan-out loop, and the routes.
import type { DataSource } from "typeorm";
import { webhookRetryJob } from "../../jobs/webhook-retry.js";
import type { Config } from "../config.js";
import type { DatabaseListener } from "../db/listener.js";
import type { Logger } from "../logger.js";
import type { Loop } from "../loop.js";
import { WebhookDeliverer } from "./delivery.js";
import { WebhookFanout } from "./fanout.js";
import { webhooksRouter } from "./handlers.js";
import { WebhookEndpointService } from "./service.js";

export function createWebhooks(deps: { db: DataSource; logger: Logger; config: Pick<Config, "secretKey" | "webhooks">; listener: DatabaseListener }) {
  const { db, logger, config } = deps;
  const outbound = { secretKey: config.secretKey, allowPrivate: config.webhooks.allowPrivate };
  const webhookDeliverer = new WebhookDeliverer(db, logger, {
    ...outbound,
    timeoutMs: config.webhooks.timeoutMs,
    ...(config.webhooks.retryScheduleMs ? { retryScheduleMs: config.webhooks.retryScheduleMs } : {}),
  });
  const webhooks = new WebhookEndpointService(db, { ...outbound, onResend: () => webhookDeliverer.wake() });
  const webhookFanout = new WebhookFanout(db, logger, () => webhookDeliverer.wake(), { listener: deps.listener });
  const loops: Loop[] = [webhookDeliverer, webhookFanout];
  return { webhooks, webhookDeliverer, webhookFanout, router: webhooksRouter(webhooks), jobs: [webhookRetryJob(webhookDeliverer)], loops };
}
