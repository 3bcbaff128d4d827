import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from "typeorm";
import type { WebhookDeliveryStatus } from "../../contract/index.js";

@Entity("webhook_endpoints")
export class WebhookEndpointRow {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text" }) url!: string;
  @Column({ type: "text", nullable: true }) description!: string | null;
  @Column({ type: "text", array: true }) events!: string[];
  /** The pinned connection's id; null: every connection of the workspace. */
  @Column({ type: "text", name: "connection_id", nullable: true }) connectionId!: string | null;
  /** The signing secret, encrypted (server/secrets.ts); never returned after creation. */
  @Column({ type: "text", name: "secret_sealed" }) secretSealed!: string;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "deleted_at", nullable: true }) deletedAt!: Date | null;
}

export type DeliveryStatus = WebhookDeliveryStatus;

@Entity("webhook_deliveries")
export class WebhookDeliveryRow {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "endpoint_id" }) endpointId!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text", name: "event_id" }) eventId!: string;
  @Column({ type: "text", name: "event_type" }) eventType!: string;
  @Column({ type: "text" }) status!: DeliveryStatus;
  @Column({ type: "integer", name: "attempt_count" }) attemptCount!: number;
  /** Failed attempts since the delivery was created or resent: the index into the retry schedule. */
  @Column({ type: "integer", name: "retry_step" }) retryStep!: number;
  @Column({ type: "timestamptz", name: "next_attempt_at", nullable: true }) nextAttemptAt!: Date | null;
  @Column({ type: "timestamptz", name: "locked_until", nullable: true }) lockedUntil!: Date | null;
  @Column({ type: "text", name: "claim_token", nullable: true }) claimToken!: string | null;
  @Column({ type: "integer", name: "last_status_code", nullable: true }) lastStatusCode!: number | null;
  @Column({ type: "text", name: "last_error", nullable: true }) lastError!: string | null;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "completed_at", nullable: true }) completedAt!: Date | null;
}

export type AttemptTrigger = "initial" | "retry" | "manual";

@Entity("webhook_attempts")
export class WebhookAttemptRow {
  @PrimaryGeneratedColumn({ type: "bigint" }) id!: string;
  @Column({ type: "text", name: "delivery_id" }) deliveryId!: string;
  @Column({ type: "timestamptz", name: "attempted_at" }) attemptedAt!: Date;
  @Column({ type: "text" }) trigger!: AttemptTrigger;
  @Column({ type: "integer", name: "status_code", nullable: true }) statusCode!: number | null;
  @Column({ type: "integer", name: "latency_ms" }) latencyMs!: number;
  @Column({ type: "text", name: "error_code", nullable: true }) errorCode!: string | null;
  @Column({ type: "text", nullable: true }) error!: string | null;
}

export const WEBHOOK_ENTITIES = [WebhookEndpointRow, WebhookDeliveryRow, WebhookAttemptRow];
