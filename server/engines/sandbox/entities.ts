// The sandbox network's own tables (migration 1732240200000-sandbox.ts).
import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from "typeorm";
import type { Location, Media, Recipient } from "../../../contract/index.js";

export type SessionState = "pairing" | "linked" | "unlinked";
export type Receipts = "read" | "delivered" | "none";

@Entity("sandbox_sessions")
export class SandboxSession {
  @PrimaryColumn({ type: "text", name: "connection_id" }) connectionId!: string;
  @Column({ type: "text" }) state!: SessionState;
  @Column({ type: "bytea", name: "pairing_digest", nullable: true }) pairingDigest!: Buffer | null;
  @Column({ type: "text", nullable: true }) phone!: string | null;
  @Column({ type: "boolean" }) running!: boolean;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "updated_at", default: () => "now()" }) updatedAt!: Date;
}

@Entity("sandbox_contacts")
export class SandboxContact {
  @PrimaryColumn({ type: "text" }) phone!: string;
  @Column({ type: "boolean", name: "on_network" }) onNetwork!: boolean;
  @Column({ type: "text" }) receipts!: Receipts;
  /** How the contact answers being added to a group (their privacy setting). */
  @Column({ type: "text", name: "group_add", default: "allow" }) groupAdd!: "allow" | "invite" | "refuse";
  @Column({ type: "timestamptz", name: "updated_at", default: () => "now()" }) updatedAt!: Date;
}

@Entity("sandbox_deliveries")
export class SandboxDelivery {
  @PrimaryGeneratedColumn({ type: "bigint" }) id!: string;
  @Column({ type: "text", name: "message_id" }) messageId!: string;
  @Column({ type: "text", name: "provider_message_id" }) providerMessageId!: string;
  @Column({ type: "text", name: "connection_id" }) connectionId!: string;
  @Column({ type: "text", name: "from_phone", nullable: true }) fromPhone!: string | null;
  /** The phone or group id the message went to. */
  @Column({ type: "text", name: "to_address" }) toAddress!: string;
  @Column({ type: "jsonb" }) recipient!: Recipient;
  @Column({ type: "text", nullable: true }) body!: string | null;
  @Column({ type: "jsonb", nullable: true }) media!: Media | null;
  @Column({ type: "jsonb", nullable: true }) location!: Location | null;
  @Column({ type: "text" }) outcome!: "delivered" | "not_on_network";
  /** Our id of the message a reply quotes. */
  @Column({ type: "text", name: "quoted_message_id", nullable: true }) quotedMessageId!: string | null;
  @Column({ type: "jsonb", nullable: true }) poll!: { question: string; options: string[]; selectable: number } | null;
  /** The receipts it is reported with, when they are applied in process (server/engines/sandbox/receipts.ts). */
  @Column({ type: "text", array: true, nullable: true }) reports!: string[] | null;
  @Column({ type: "timestamptz", name: "created_at", default: () => "clock_timestamp()" }) createdAt!: Date;
}

// sandbox_callbacks and sandbox_faults are served by SQL only (outbox.ts, network.ts): no entities.
export const SANDBOX_ENTITIES = [SandboxSession, SandboxContact, SandboxDelivery];
