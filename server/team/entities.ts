import { Column, Entity, PrimaryColumn } from "typeorm";
import type { Role } from "../../contract/common.js";

/** A user row (read through SQL: sign-in and the team service join it). */
export interface User {
  id: string;
  email: string;
  createdAt: Date;
}

@Entity("members")
export class Member {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text", name: "user_id" }) userId!: string;
  @Column({ type: "text" }) role!: Role;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
}

@Entity("invitations")
export class Invitation {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text" }) email!: string;
  @Column({ type: "text" }) role!: Role;
  @Column({ type: "bytea", name: "token_digest" }) tokenDigest!: Buffer;
  @Column({ type: "text", name: "invited_by" }) invitedBy!: string;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "expires_at" }) expiresAt!: Date;
  @Column({ type: "timestamptz", name: "accepted_at", nullable: true }) acceptedAt!: Date | null;
  @Column({ type: "timestamptz", name: "revoked_at", nullable: true }) revokedAt!: Date | null;
}
