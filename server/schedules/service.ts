// Schedules: creation with every rule of docs/schedules.md, reads, and the lifecycle as a table
// of allowed moves. Firing lives in firing.ts; the recurrence maths in recurrence.ts. Every write
// of a schedule's state happens under its row lock, so a pause, a resume or a cancel and a
// concurrent fire are serialized (the fire claims with SKIP LOCKED and simply moves on).
import { DateTime } from "luxon";
import type { DataSource, EntityManager } from "typeorm";
import { allowedFrom, nextStatus } from "../../contract/schedules.js";
import {
  PREVIEW_RUNS,
  SendMessageBody,
  type CreateScheduleBody,
  type PreviewScheduleBody,
  type SchedulePreview,
  type Schedule as ScheduleView,
  type ScheduleStatus,
} from "../../contract/index.js";
import { Connection } from "../connections/entities.js";
import { recordEvent } from "../events/record.js";
import { ApiError, zodFieldErrors, type FieldError } from "../http/errors.js";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import type { MessageSender } from "../messages/send.js";
import { Schedule } from "./entities.js";
import { firstRun, isValidTimeZone, resumeFrom, upcomingRuns, type Progress } from "./recurrence.js";

// The lifecycle table lives in the contract, where the dashboard reads it to offer only allowed moves.
export { allowedFrom, nextStatus, type ScheduleAction } from "../../contract/schedules.js";

/** Send rules that depend on the moment of sending, checked at each fire rather than at creation. */
const CHECKED_AT_FIRE = new Set(["connection_not_ready", "quota_exceeded"]);

export function scheduleView(s: Schedule): ScheduleView {
  return {
    id: s.id,
    object: "schedule",
    name: s.name,
    status: s.status,
    timezone: s.timezone,
    recurrence: s.recurrence,
    message: s.message,
    starts_at: iso(s.startsAt),
    ends_at: iso(s.endsAt),
    max_occurrences: s.maxOccurrences,
    occurrences: s.occurrences,
    next_run_at: s.status === "completed" || s.status === "canceled" ? null : iso(s.nextRunAt),
    last_run_at: iso(s.lastRunAt),
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

export class ScheduleService {
  constructor(
    private readonly db: DataSource,
    private readonly sender: MessageSender,
  ) {}

  async create(principal: Principal, body: CreateScheduleBody, now = new Date()): Promise<Schedule> {
    const message = await this.validMessage(principal, body.message, body.timezone);
    const startsAt = body.starts_at ? new Date(body.starts_at) : null;
    const endsAt = body.ends_at ? new Date(body.ends_at) : null;
    const first = firstRun({ rule: body.recurrence, timeZone: body.timezone, startsAt, endsAt, now });
    if (!first) throw ApiError.validation([neverFires(startsAt, endsAt, now)]);
    const schedule: Schedule = {
      id: newId("sch", now.getTime()),
      workspaceId: principal.workspaceId,
      name: body.name,
      status: "active",
      timezone: body.timezone,
      recurrence: body.recurrence,
      message,
      startsAt,
      endsAt,
      maxOccurrences: body.max_occurrences ?? null,
      occurrences: 0,
      nextRunAt: first,
      lastRunAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.db.getRepository(Schedule).insert(schedule as never);
    return schedule;
  }

  /**
   * The next runs the timing fields of a create body would give (dashboard preview), refused with
   * the same 400s as create: an unknown zone, a schedule that would never fire. Writes nothing.
   */
  preview(body: PreviewScheduleBody, now = new Date()): SchedulePreview {
    const zoneError = timezoneError(body.timezone);
    if (zoneError) throw ApiError.validation([zoneError]);
    const startsAt = body.starts_at ? new Date(body.starts_at) : null;
    const endsAt = body.ends_at ? new Date(body.ends_at) : null;
    const timing = { rule: body.recurrence, timeZone: body.timezone, startsAt, endsAt, now };
    const runs = upcomingRuns({ ...timing, maxOccurrences: body.max_occurrences ?? null, count: PREVIEW_RUNS });
    if (runs.length === 0) throw ApiError.validation([neverFires(startsAt, endsAt, now)]);
    return {
      runs: runs.map((at) => ({
        at: at.toISOString(),
        local: DateTime.fromJSDate(at, { zone: body.timezone }).toFormat(LOCAL_FORMAT),
      })),
    };
  }

  /** Every schedule of the workspace, newest first. */
  async list(workspaceId: string, status?: ScheduleStatus): Promise<Schedule[]> {
    return this.db.getRepository(Schedule).find({ where: { workspaceId, ...(status ? { status } : {}) }, order: { id: "DESC" } });
  }

  async get(workspaceId: string, id: string): Promise<Schedule> {
    const schedule = await this.db.getRepository(Schedule).findOneBy({ workspaceId, id });
    if (!schedule) throw ApiError.notFound("schedule");
    return schedule;
  }

  pause(workspaceId: string, id: string): Promise<Schedule> {
    return this.move(workspaceId, id, "pause", () => ({}));
  }

  /** Next run computed from now: periods missed while paused are not fired. */
  resume(workspaceId: string, id: string, now = new Date()): Promise<Schedule> {
    return this.move(workspaceId, id, "resume", (s) =>
      progressPatch(resumeFrom({ rule: s.recurrence, timeZone: s.timezone, now, startsAt: s.startsAt, endsAt: s.endsAt })),
    );
  }

  cancel(workspaceId: string, id: string): Promise<Schedule> {
    return this.move(workspaceId, id, "cancel", () => ({ nextRunAt: null }));
  }

  /**
   * Applies a user operation under the row lock. `patch` adds what the move changes beyond the
   * status; a resume whose next run would be past ends_at completes the schedule instead.
   */
  private async move(workspaceId: string, id: string, action: "pause" | "resume" | "cancel", patch: (s: Schedule) => Partial<Schedule>): Promise<Schedule> {
    return this.db.transaction(async (em) => {
      const schedule = await em
        .getRepository(Schedule)
        .createQueryBuilder("s")
        .setLock("pessimistic_write")
        .where("s.workspaceId = :workspaceId AND s.id = :id", { workspaceId, id })
        .getOne();
      if (!schedule) throw ApiError.notFound("schedule");
      const status = nextStatus(action, schedule.status);
      if (!status) {
        const article = /^[aeiou]/.test(schedule.status) ? "An" : "A";
        throw ApiError.invalidState(`${article} ${schedule.status} schedule cannot be ${PAST[action]}; ${action} applies to ${allowedFrom(action).join(" or ")} schedules.`);
      }
      const updated: Schedule = { ...schedule, status, ...patch(schedule), updatedAt: new Date() };
      if (updated.nextRunAt === null && updated.status === "active") updated.status = nextStatus("complete", "active")!;
      await saveState(em, updated);
      if (updated.status === "completed") {
        await recordScheduleEvent(em, updated, "schedule.completed", { schedule: scheduleView(updated) }, await connectionOf(em, updated));
      }
      return updated;
    });
  }

  /**
   * The message is a send request without send_at, checked by the send path's own rules now so
   * that a schedule that could never send is refused. Whether the connection is connected and
   * the monthly allowance are rules of the moment of sending: they are checked at each fire.
   */
  private async validMessage(principal: Principal, message: Record<string, unknown>, timezone: string): Promise<SendMessageBody> {
    const errors: FieldError[] = [];
    const zoneError = timezoneError(timezone);
    if (zoneError) errors.push(zoneError);
    if ("send_at" in message) errors.push({ path: "body.message.send_at", message: "is not allowed: the recurrence decides when the message is sent" });
    const parsed = SendMessageBody.safeParse(message);
    if (!parsed.success) errors.push(...zodFieldErrors(parsed.error, "body.message"));
    if (errors.length || !parsed.success) throw ApiError.validation(errors);
    const refusal = await this.sender.check(principal, parsed.data);
    if (!refusal || CHECKED_AT_FIRE.has(refusal.code)) return parsed.data;
    const problem = await this.sender.problem(principal, refusal);
    if (problem.code !== "validation_failed") throw problem;
    throw ApiError.validation((problem.extra.errors ?? []).map((e) => ({ path: `body.message.${e.path}`, message: e.message })));
  }
}

const PAST: Record<"pause" | "resume" | "cancel", string> = { pause: "paused", resume: "resumed", cancel: "canceled" };

/** The columns a progress (fire, resume) sets. */
export function progressPatch(progress: Progress): Pick<Schedule, "nextRunAt"> {
  return { nextRunAt: progress.completed ? null : progress.nextRunAt };
}

/** Writes the state columns of a schedule whose row `em` holds locked. */
export async function saveState(em: EntityManager, s: Schedule): Promise<void> {
  await em.update(
    Schedule,
    { id: s.id },
    { status: s.status, nextRunAt: s.nextRunAt, occurrences: s.occurrences, lastRunAt: s.lastRunAt, updatedAt: s.updatedAt },
  );
}

export async function recordScheduleEvent(
  em: EntityManager,
  s: Schedule,
  type: "schedule.fired" | "schedule.completed",
  data: Record<string, unknown>,
  connection: { id: string; slug: string } | null,
): Promise<void> {
  await recordEvent(em, { workspaceId: s.workspaceId, type, connection: connection ? { id: connection.id, slug: connection.slug } : null, data });
}

/** The live connection a schedule's message names, as events reference it; null when there is none. */
export async function connectionOf(em: EntityManager, s: Schedule): Promise<Connection | null> {
  const slug = typeof s.message.connection === "string" ? s.message.connection : "";
  return em
    .getRepository(Connection)
    .createQueryBuilder("c")
    .where("c.workspaceId = :ws AND c.slug = :slug AND c.deletedAt IS NULL", { ws: s.workspaceId, slug })
    .getOne();
}

/** A run's wall-clock time with the zone's offset at that moment, always numeric (`+00:00`, never `Z`). */
const LOCAL_FORMAT = "yyyy-MM-dd'T'HH:mm:ssZZ";

/** Create's and preview's refusal of a zone name the time zone database does not know. */
function timezoneError(timezone: string): FieldError | null {
  return isValidTimeZone(timezone) ? null : { path: "body.timezone", message: "must be a known IANA time zone name, such as Europe/Berlin" };
}

function neverFires(startsAt: Date | null, endsAt: Date | null, now: Date): FieldError {
  if (startsAt && endsAt && startsAt >= endsAt) return { path: "body.ends_at", message: "must be after starts_at: the schedule would never fire" };
  if (endsAt && endsAt <= now) return { path: "body.ends_at", message: "is in the past: the schedule would never fire" };
  return { path: "body.recurrence", message: "has no occurrence between the start and ends_at (or 9999-12-31T23:59:59Z): the schedule would never fire" };
}

function iso(d: Date | null): string | null {
  return d ? d.toISOString() : null;
}
