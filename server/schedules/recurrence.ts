// Recurrence maths for schedules (docs/schedules.md). Pure: no I/O, no clock —
// every "now" is a parameter. Time zone data comes from luxon's IANAZone (ICU's tzdata through
// Intl); the rest is civil-calendar arithmetic on UTC day numbers.
//
// Semantics, in one place:
// - `hour`/`minute` are the wall-clock time in the schedule's IANA time zone.
// - A wall time that does not exist that day (spring forward) fires at the same distance after
//   the gap: it is read with the offset in force before the transition, so 02:30 in a one-hour gap
//   fires at 03:30 and 02:15 in Lord Howe's 30-minute gap at 02:45 (RFC 5545, Temporal's
//   "compatible"). A wall time that occurs twice (fall back) fires once, at the earlier instant.
// - weekly: 0 = Sunday … 6 = Saturday, no day twice. monthly: 1-31 fires only in months that have
//   that day; -1 is the last day of every month.
// - The first run is the first occurrence at or after max(starts_at, now); occurrences after
//   ends_at (inclusive bound) never fire; max_occurrences fires then the schedule completes.
// - No run is after LAST_RUN_AT (9999-12-31T23:59:59Z): later instants have no RFC 3339 form
//   (toISOString writes "+010000-…"), so such a run counts as "never", like one after ends_at.
import { IANAZone } from "luxon";
import type { Recurrence } from "../../contract/schedules.js";
import { isValidTimeZone } from "../time-zones.js";

// Callers that validate a schedule's zone take the rule from here too.
export { isValidTimeZone };

export type { Recurrence } from "../../contract/schedules.js";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Enough local days for every valid rule to recur (day 31 recurs within 62 days, -1 within 31). */
const MAX_DAYS_SCANNED = 4 * 366 + 62;
/** The last instant a run may have: the end of year 9999, the last one RFC 3339 can write. */
export const LAST_RUN_AT = new Date("9999-12-31T23:59:59Z");

/** Outcome of a fire or a resume: when the schedule runs next, or that it has completed. */
export interface Progress {
  /** The next occurrence instant, or null when completed. */
  nextRunAt: Date | null;
  completed: boolean;
}

export interface FirstRunInput {
  rule: Recurrence;
  timeZone: string;
  startsAt?: Date | null;
  endsAt?: Date | null;
  now: Date;
}

export interface AdvanceInput {
  rule: Recurrence;
  timeZone: string;
  /** The occurrence instant that just fired (the schedule's next_run_at before this fire). */
  firedAt: Date;
  now: Date;
  endsAt?: Date | null;
  maxOccurrences?: number | null;
  /** How many times the schedule has fired, this fire included. */
  occurrences: number;
}

export interface ResumeInput {
  rule: Recurrence;
  timeZone: string;
  now: Date;
  startsAt?: Date | null;
  endsAt?: Date | null;
}

/** The first occurrence of `rule` in `timeZone` at or after `from`. */
export function occurrenceAtOrAfter(rule: Recurrence, timeZone: string, from: Date): Date {
  checkRule(rule);
  const zone = zoneOf(timeZone);
  const fromMs = instantMs(from, "from");
  const matches = dayMatcher(rule);
  const wallMinutes = rule.hour * 60 + rule.minute;
  // Start a day early: an occurrence dated the previous local day can still be at or after `from`
  // when a gap pushes it forward across midnight.
  const firstDay = Math.floor((fromMs + offsetMs(zone, fromMs)) / DAY_MS) - 1;
  for (let day = firstDay; day <= firstDay + MAX_DAYS_SCANNED; day++) {
    if (!matches(day)) continue;
    const at = resolveWallTime(zone, day * DAY_MS + wallMinutes * MINUTE_MS);
    if (at >= fromMs) return new Date(at);
  }
  throw new Error(`no occurrence of ${JSON.stringify(rule)} within ${MAX_DAYS_SCANNED} days`);
}

/** The first occurrence of `rule` in `timeZone` strictly after `after`. */
export function nextOccurrence(rule: Recurrence, timeZone: string, after: Date): Date {
  return occurrenceAtOrAfter(rule, timeZone, new Date(instantMs(after, "after") + 1));
}

/**
 * The first run of a new schedule: the first occurrence at or after max(startsAt, now) (a
 * starts_at in the past behaves like now). Null when the schedule would never fire — startsAt is
 * not before endsAt, or the first occurrence is after endsAt or LAST_RUN_AT; the caller answers 400.
 */
export function firstRun({ rule, timeZone, startsAt, endsAt, now }: FirstRunInput): Date | null {
  const nowMs = instantMs(now, "now");
  const startMs = startsAt ? instantMs(startsAt, "startsAt") : nowMs;
  const endMs = endsAt ? instantMs(endsAt, "endsAt") : undefined;
  if (endMs !== undefined && startMs >= endMs) return null;
  const first = occurrenceAtOrAfter(rule, timeZone, new Date(Math.max(startMs, nowMs)));
  return bounded(first, endsAt).nextRunAt;
}

/**
 * After a fire: the next occurrence strictly after max(firedAt, now), so a schedule that fell
 * behind fires once and drops the backlog. Completed once `occurrences` reaches `maxOccurrences`
 * or the next occurrence is after `endsAt` or LAST_RUN_AT.
 */
export function advance({ rule, timeZone, firedAt, now, endsAt, maxOccurrences, occurrences }: AdvanceInput): Progress {
  const base = Math.max(instantMs(firedAt, "firedAt"), instantMs(now, "now"));
  if (maxOccurrences != null && occurrences >= maxOccurrences) return { nextRunAt: null, completed: true };
  return bounded(nextOccurrence(rule, timeZone, new Date(base)), endsAt);
}

/**
 * On resume: the next run is computed from now — the first occurrence at or after max(now,
 * startsAt); periods missed while paused are not fired. Completed when that is after `endsAt`.
 */
export function resumeFrom({ rule, timeZone, now, startsAt, endsAt }: ResumeInput): Progress {
  const nowMs = instantMs(now, "now");
  const from = startsAt ? Math.max(nowMs, instantMs(startsAt, "startsAt")) : nowMs;
  return bounded(occurrenceAtOrAfter(rule, timeZone, new Date(from)), endsAt);
}

export interface UpcomingInput {
  rule: Recurrence;
  timeZone: string;
  startsAt?: Date | null;
  endsAt?: Date | null;
  maxOccurrences?: number | null;
  now: Date;
  /** How many runs to list at most. */
  count: number;
}

/**
 * The runs a new schedule would make, in order, at most `count`: its first run, then each run the
 * scheduler's advance() gives after firing the previous one on time. Fewer when ends_at or
 * max_occurrences ends it sooner; empty when it would never fire.
 */
export function upcomingRuns({ rule, timeZone, startsAt, endsAt, maxOccurrences, now, count }: UpcomingInput): Date[] {
  const runs: Date[] = [];
  let next = firstRun({ rule, timeZone, startsAt, endsAt, now });
  while (next && runs.length < count) {
    runs.push(next);
    next = advance({ rule, timeZone, firedAt: next, now, endsAt, maxOccurrences, occurrences: runs.length }).nextRunAt;
  }
  return runs;
}

/** `next`, or completed when it is after `endsAt` (inclusive bound) or after LAST_RUN_AT. */
function bounded(next: Date, endsAt: Date | null | undefined): Progress {
  const last = endsAt ? Math.min(instantMs(endsAt, "endsAt"), LAST_RUN_AT.getTime()) : LAST_RUN_AT.getTime();
  if (next.getTime() > last) return { nextRunAt: null, completed: true };
  return { nextRunAt: next, completed: false };
}

/**
 * The instant at which the wall clock of `zone` reads `wall` (local date-time expressed as
 * milliseconds on a UTC time line). Candidates use the offsets a day before and a day after; a
 * candidate counts when the zone really has that offset at that instant. Two candidates (fall
 * back): the earlier. None (spring forward): read with the offset before the gap, which lands the
 * same distance past the gap as the wall time was into it.
 */
function resolveWallTime(zone: IANAZone, wall: number): number {
  const before = offsetMs(zone, wall - DAY_MS);
  const after = offsetMs(zone, wall + DAY_MS);
  let best: number | undefined;
  for (const offset of [before, after]) {
    const at = wall - offset;
    if (offsetMs(zone, at) === offset && (best === undefined || at < best)) best = at;
  }
  return best ?? wall - before;
}

function offsetMs(zone: IANAZone, at: number): number {
  return zone.offset(at) * MINUTE_MS;
}

/** Whether a local calendar day (days since 1970-01-01) carries an occurrence of `rule`. */
function dayMatcher(rule: Recurrence): (day: number) => boolean {
  switch (rule.type) {
    case "daily":
      return () => true;
    case "weekly": {
      const days = new Set(rule.days_of_week);
      // 1970-01-01 was a Thursday (4).
      return (day) => days.has((((day + 4) % 7) + 7) % 7);
    }
    case "monthly": {
      const want = rule.day_of_month;
      if (want === -1) return (day) => new Date((day + 1) * DAY_MS).getUTCDate() === 1;
      return (day) => new Date(day * DAY_MS).getUTCDate() === want;
    }
  }
}

const zones = new Map<string, IANAZone>();

function zoneOf(name: string): IANAZone {
  let zone = zones.get(name);
  if (!zone) {
    if (!isValidTimeZone(name)) throw new RangeError(`unknown time zone ${JSON.stringify(name)}`);
    zone = IANAZone.create(name);
    zones.set(name, zone);
  }
  return zone;
}

function instantMs(value: Date, what: string): number {
  const ms = value instanceof Date ? value.getTime() : Number.NaN;
  if (!Number.isFinite(ms)) throw new RangeError(`${what} is not a valid instant`);
  return ms;
}

function checkRule(rule: Recurrence): void {
  const int = (v: unknown, min: number, max: number) => Number.isInteger(v) && (v as number) >= min && (v as number) <= max;
  if (!int(rule.hour, 0, 23) || !int(rule.minute, 0, 59)) throw new RangeError("recurrence hour must be 0-23 and minute 0-59");
  if (rule.type === "weekly") {
    const days = rule.days_of_week;
    if (!Array.isArray(days) || days.length === 0 || !days.every((d) => int(d, 0, 6)) || new Set(days).size !== days.length) {
      throw new RangeError("days_of_week must hold 1-7 distinct integers 0-6");
    }
  } else if (rule.type === "monthly") {
    if (rule.day_of_month !== -1 && !int(rule.day_of_month, 1, 31)) throw new RangeError("day_of_month must be 1-31 or -1");
  } else if ((rule as { type: unknown }).type !== "daily") {
    throw new RangeError("recurrence type must be daily, weekly or monthly");
  }
}
