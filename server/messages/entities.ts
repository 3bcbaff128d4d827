import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from "typeorm";
import type { ContextSensitivity, Location, Media, MessageStatus, Recipient } from "../../contract/index.js";

@Entity("messages")
export class Message {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text", name: "connection_id" }) connectionId!: string;
  @Column({ type: "text" }) direction!: "inbound" | "outbound";
  @Column({ type: "text" }) status!: MessageStatus;
  /** Outbound: the recipient as sent. Inbound: the linked number or `{group}` it arrived on. */
  @Column({ type: "jsonb" }) recipient!: Recipient;
  /** Inbound: who sent it. Outbound: null. */
  @Column({ type: "text", nullable: true }) sender!: string | null;
  @Column({ type: "text", nullable: true }) body!: string | null;
  @Column({ type: "jsonb", nullable: true }) media!: Media | null;
  @Column({ type: "jsonb", nullable: true }) location!: Location | null;
  @Column({ type: "jsonb", nullable: true }) context!: Record<string, unknown> | null;
  @Column({ type: "jsonb", nullable: true }) metadata!: Record<string, unknown> | null;
  @Column({ type: "text", name: "context_sensitivity", nullable: true }) contextSensitivity!: ContextSensitivity | null;
  @Column({ type: "timestamptz", name: "send_at", nullable: true }) sendAt!: Date | null;
  @Column({ type: "text", nullable: true }) timezone!: string | null;
  @Column({ type: "text", name: "provider_message_id", nullable: true }) providerMessageId!: string | null;
  @Column({ type: "text", name: "error_code", nullable: true }) errorCode!: string | null;
  @Column({ type: "text", name: "error_message", nullable: true }) errorMessage!: string | null;
  @Column({ type: "text", name: "schedule_id", nullable: true }) scheduleId!: string | null;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "updated_at", default: () => "now()" }) updatedAt!: Date;
}

@Entity("message_timeline")
export class TimelineEntry {
  @PrimaryGeneratedColumn({ type: "bigint" }) id!: string;
  @Column({ type: "text", name: "message_id" }) messageId!: string;
  @Column({ type: "text" }) status!: MessageStatus;
  @Column({ type: "timestamptz", default: () => "clock_timestamp()" }) at!: Date;
  @Column({ type: "text", nullable: true }) detail!: string | null;
}

@Entity("dispatch_queue")
export class DispatchEntry {
  @PrimaryColumn({ type: "text", name: "message_id" }) messageId!: string;
  @Column({ type: "text", name: "connection_id" }) connectionId!: string;
  @Column({ type: "timestamptz", name: "available_at", default: () => "now()" }) availableAt!: Date;
  @Column({ type: "integer" }) attempts!: number;
  @Column({ type: "timestamptz", name: "locked_until", nullable: true }) lockedUntil!: Date | null;
  @Column({ type: "text", name: "last_error", nullable: true }) lastError!: string | null;
}
