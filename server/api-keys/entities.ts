import { Column, Entity, PrimaryColumn } from "typeorm";
import type { Scope } from "../../contract/common.js";

@Entity("api_keys")
export class ApiKey {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text" }) name!: string;
  @Column({ type: "text" }) prefix!: string;
  @Column({ type: "bytea" }) digest!: Buffer;
  @Column({ type: "text" }) environment!: "live" | "test";
  @Column({ type: "text", array: true }) scopes!: Scope[];
  @Column({ type: "text", name: "created_by" }) createdBy!: string;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "last_used_at", nullable: true }) lastUsedAt!: Date | null;
  @Column({ type: "timestamptz", name: "revoked_at", nullable: true }) revokedAt!: Date | null;
}
