// Schedules (docs/schedules.md). Bodies are `.strict()` ("no extra properties"); unknown fields
// are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { FreeObject, IdParams, Timestamp, TimezoneName, ZonedDateTime, list, problems, type RouteMetadata, chars } from "./common.js";

const c = initContract();

export const SCHEDULE_STATUSES = ["active", "paused", "completed", "canceled"] as const;
export const ScheduleStatus = z.enum(SCHEDULE_STATUSES);
export type ScheduleStatus = z.infer<typeof ScheduleStatus>;

/** What can happen to a schedule: the user's operations, and `complete` (the system's, on a fire or resume). */
export type ScheduleAction = "pause" | "resume" | "cancel" | "complete";

// Spec 3.3's lifecycle as a table. A missing entry means the action is refused from that state
// (409 invalid_state for user operations). The server enforces it; the dashboard offers from it.
const MOVES: Record<ScheduleAction, Partial<Record<ScheduleStatus, ScheduleStatus>>> = {
  pause: { active: "paused" },
  resume: { paused: "active" },
  cancel: { active: "canceled", paused: "canceled" },
  complete: { active: "completed" },
};

/** The status after `action`, or null when it is not allowed from `from`. */
export function nextStatus(action: ScheduleAction, from: ScheduleStatus): ScheduleStatus | null {
  return MOVES[action][from] ?? null;
}

/** States `action` accepts (for error messages). */
export function allowedFrom(action: ScheduleAction): ScheduleStatus[] {
  return Object.keys(MOVES[action]) as ScheduleStatus[];
}

const hour = z.number().int().min(0).max(23);
const minute = z.number().int().min(0).max(59);

/** 0 = Sunday … 6 = Saturday; each day at most once. */
export const DaysOfWeek = z
  .array(z.number().int().min(0).max(6))
  .min(1)
  .max(7)
  .refine((days) => new Set(days).size === days.length, { message: "days_of_week must not repeat a day" });
export type DaysOfWeek = z.infer<typeof DaysOfWeek>;

export const DailyRecurrence = z.object({ type: z.literal("daily"), hour, minute }).strict();
export type DailyRecurrence = z.infer<typeof DailyRecurrence>;
export const WeeklyRecurrence = z.object({ type: z.literal("weekly"), hour, minute, days_of_week: DaysOfWeek }).strict();
export type WeeklyRecurrence = z.infer<typeof WeeklyRecurrence>;
const DAY_OF_MONTH_RULE = "must be an integer from 1 to 31, or -1 for the last day of the month";
export const MonthlyRecurrence = z
  .object({
    type: z.literal("monthly"),
    hour,
    minute,
    // -1 is the last day of the month; 29-31 in a shorter month is the server's rule to resolve.
    day_of_month: z.union([z.number({ errorMap: () => ({ message: DAY_OF_MONTH_RULE }) }).int().min(1).max(31), z.literal(-1)], {
      errorMap: () => ({ message: DAY_OF_MONTH_RULE }),
    }),
  })
  .strict();
export type MonthlyRecurrence = z.infer<typeof MonthlyRecurrence>;

export const Recurrence = z.discriminatedUnion("type", [DailyRecurrence, WeeklyRecurrence, MonthlyRecurrence]);
export type Recurrence = z.infer<typeof Recurrence>;

export const CreateScheduleBody = z
  .object({
    name: chars(1, 80),
    timezone: TimezoneName,
    recurrence: Recurrence,
    // Free-form here (the spec leaves its validation open); the server checks it as a send body
    // without send_at (400 with paths under body.message when the send path would refuse it).
    message: FreeObject.describe("A send request (POST /v1/messages/text body) without `send_at`, validated at creation"),
    starts_at: ZonedDateTime.optional(),
    ends_at: ZonedDateTime.optional(),
    max_occurrences: z.number().int().min(1).max(10000).optional(),
  })
  .strict();
export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

/** How many runs a preview lists at most. */
export const PREVIEW_RUNS = 5;

// The create body's timing fields, and nothing else: what decides when a schedule fires.
export const PreviewScheduleBody = CreateScheduleBody.pick({
  timezone: true,
  recurrence: true,
  starts_at: true,
  ends_at: true,
  max_occurrences: true,
}).strict();
export type PreviewScheduleBody = z.infer<typeof PreviewScheduleBody>;

export const PreviewRun = z.object({
  at: Timestamp,
  local: z.string().describe("The same instant as the schedule's zone shows it: ISO 8601 local date-time with that moment's UTC offset"),
});
export type PreviewRun = z.infer<typeof PreviewRun>;

export const SchedulePreview = z.object({
  runs: z
    .array(PreviewRun)
    .max(PREVIEW_RUNS)
    .describe(`The next runs, at most ${PREVIEW_RUNS}; fewer when ends_at or max_occurrences ends the schedule sooner`),
});
export type SchedulePreview = z.infer<typeof SchedulePreview>;

export const ListSchedulesQuery = z.object({ status: ScheduleStatus.optional() }).strict();
export type ListSchedulesQuery = z.infer<typeof ListSchedulesQuery>;

export const Schedule = z.object({
  id: z.string().describe("Identifier with prefix `sch_`"),
  object: z.literal("schedule"),
  name: z.string(),
  status: ScheduleStatus,
  timezone: z.string(),
  recurrence: Recurrence,
  message: FreeObject,
  starts_at: Timestamp.nullable(),
  ends_at: Timestamp.nullable(),
  max_occurrences: z.number().int().nullable(),
  occurrences: z.number().int().describe("How many times it has fired"),
  next_run_at: Timestamp.nullable().describe(
    "The next instant it fires; null once completed or canceled. While paused: the run that was next when it was paused (resume recomputes it from now)",
  ),
  last_run_at: Timestamp.nullable().describe("The occurrence instant that fired last"),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Schedule = z.infer<typeof Schedule>;

export const ScheduleList = list(Schedule);
export type ScheduleList = z.infer<typeof ScheduleList>;

const read = { security: { auth: "key_or_session", scope: "schedules:read" }, tag: "Schedules" } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "schedules:write" }, tag: "Schedules" } satisfies RouteMetadata;

const transition = <V extends "pause" | "resume" | "cancel">(verb: V, summary: string, description: string) =>
  ({
    method: "POST",
    path: `/v1/schedules/:id/${verb}`,
    summary,
    description,
    pathParams: IdParams,
    body: c.noBody(),
    responses: { 200: Schedule, ...problems(400, 401, 403, 404, 409, 429) },
    metadata: write,
  }) as const;

export const schedules = c.router(
  {
    create: {
      method: "POST",
      path: "/v1/schedules",
      summary: "Create a schedule",
      description: "The response carries the resolved `next_run_at`. Unknown timezone or a recurrence that never fires: 400.",
      body: CreateScheduleBody,
      responses: { 201: Schedule, ...problems(400, 401, 402, 403, 429) },
      metadata: { ...write, feature: "scheduling" } satisfies RouteMetadata,
    },
    preview: {
      method: "POST",
      path: "/v1/schedules/preview",
      summary: "Preview a schedule's next runs (extension)",
      description:
        `Beyond the specification: the next ${PREVIEW_RUNS} runs the timing fields of a create body would give, computed by the ` +
        "scheduler's own rule, each as a UTC instant and as the schedule's zone shows it. Creates and changes nothing. " +
        "An unknown timezone or a recurrence that would never fire: 400, as on create.",
      body: PreviewScheduleBody,
      responses: { 200: SchedulePreview, ...problems(400, 401, 403, 429) },
      metadata: read,
    },
    list: {
      method: "GET",
      path: "/v1/schedules",
      summary: "List schedules",
      query: ListSchedulesQuery,
      responses: { 200: ScheduleList, ...problems(400, 401, 403, 429) },
      metadata: read,
    },
    get: {
      method: "GET",
      path: "/v1/schedules/:id",
      summary: "Retrieve a schedule",
      pathParams: IdParams,
      responses: { 200: Schedule, ...problems(400, 401, 403, 404, 429) },
      metadata: read,
    },
    pause: transition("pause", "Pause a schedule", "Keeps the schedule but stops it firing. 409 when its state does not allow it."),
    resume: transition("resume", "Resume a schedule", "The next run is computed from now; a missed period is not fired. 409 when its state does not allow it."),
    cancel: transition("cancel", "Cancel a schedule", "Permanent; a canceled schedule never restarts. 409 when its state does not allow it."),
  },
  { strictStatusCodes: true },
);
