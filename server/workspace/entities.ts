import { Column, Entity, PrimaryColumn } from "typeorm";

@Entity("plans")
export class Plan {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text" }) name!: string;
  /** Cheapest first: the plan a 402 names is the lowest-ranked one with the feature. */
  @Column({ type: "integer" }) rank!: number;
  @Column({ type: "integer", name: "max_connections", nullable: true }) maxConnections!: number | null;
  @Column({ type: "integer", name: "messages_per_month", nullable: true }) messagesPerMonth!: number | null;
  @Column({ type: "boolean" }) scheduling!: boolean;
  @Column({ type: "boolean", name: "connection_webhooks" }) connectionWebhooks!: boolean;
  @Column({ type: "boolean" }) ai!: boolean;
  @Column({ type: "boolean" }) mcp!: boolean;
  @Column({ type: "boolean", name: "member_management" }) memberManagement!: boolean;
}

@Entity("workspaces")
export class Workspace {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text" }) name!: string;
  @Column({ type: "text", name: "plan_id" }) planId!: string;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
}

@Entity("audit_log")
export class AuditEntry {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text", name: "actor_user_id", nullable: true }) actorUserId!: string | null;
  @Column({ type: "text", name: "credential_type" }) credentialType!: string;
  @Column({ type: "text", name: "credential_id", nullable: true }) credentialId!: string | null;
  @Column({ type: "text" }) action!: string;
  @Column({ type: "text", name: "target_type" }) targetType!: string;
  @Column({ type: "text", name: "target_id" }) targetId!: string;
  @Column({ type: "jsonb" }) details!: Record<string, unknown>;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
}
