import { Column, Entity, PrimaryColumn } from "typeorm";

@Entity("events")
export class DomainEvent {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text" }) type!: string;
  @Column({ type: "text", name: "connection_id", nullable: true }) connectionId!: string | null;
  /** The webhook payload as delivered: `{id, type, created_at, connection, data}`. */
  @Column({ type: "jsonb" }) payload!: Record<string, unknown>;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "fanned_out_at", nullable: true }) fannedOutAt!: Date | null;
  /** The recording transaction's id, set by the database (migration EventSinks): the log's order is (tx, id). */
  @Column({ type: "bigint", insert: false, update: false }) tx?: string;
}
