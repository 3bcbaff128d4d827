import { Column, Entity, PrimaryColumn } from "typeorm";

@Entity("sign_in_codes")
export class SignInCode {
  @PrimaryColumn({ type: "text" }) email!: string;
  @Column({ type: "bytea", name: "code_digest" }) codeDigest!: Buffer;
  @Column({ type: "integer" }) attempts!: number;
  @Column({ type: "timestamptz", name: "expires_at" }) expiresAt!: Date;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
}

@Entity("sessions")
export class Session {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "bytea", name: "token_digest" }) tokenDigest!: Buffer;
  @Column({ type: "text", name: "user_id" }) userId!: string;
  @Column({ type: "text", name: "workspace_id", nullable: true }) workspaceId!: string | null;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "expires_at" }) expiresAt!: Date;
}
