import { Column, Entity, PrimaryColumn } from "typeorm";
import type { Recurrence, ScheduleStatus } from "../../contract/index.js";

@Entity("schedules")
export class Schedule {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text" }) name!: string;
  @Column({ type: "text" }) status!: ScheduleStatus;
  @Column({ type: "text" }) timezone!: string;
  @Column({ type: "jsonb" }) recurrence!: Recurrence;
  /** The send body, without send_at; its `connection` slug is resolved at each fire. */
  @Column({ type: "jsonb" }) message!: Record<string, unknown>;
  @Column({ type: "timestamptz", name: "starts_at", nullable: true }) startsAt!: Date | null;
  @Column({ type: "timestamptz", name: "ends_at", nullable: true }) endsAt!: Date | null;
  @Column({ type: "integer", name: "max_occurrences", nullable: true }) maxOccurrences!: number | null;
  /** How many occurrences have fired (a fire that recorded a failed message counts). */
  @Column({ type: "integer" }) occurrences!: number;
  /** Null exactly when completed or canceled. */
  @Column({ type: "timestamptz", name: "next_run_at", nullable: true }) nextRunAt!: Date | null;
  /** The occurrence instant that fired last. */
  @Column({ type: "timestamptz", name: "last_run_at", nullable: true }) lastRunAt!: Date | null;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "updated_at", default: () => "now()" }) updatedAt!: Date;
}

