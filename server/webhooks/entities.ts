// Webhook tables are served by SQL only (fan-out, delivery, the endpoint service): no entities.
import type { WebhookDeliveryStatus } from "../../contract/index.js";

export type DeliveryStatus = WebhookDeliveryStatus;

export type AttemptTrigger = "initial" | "retry" | "manual";
