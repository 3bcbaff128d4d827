// Property tests: the recurrence module (luxon zone offsets, Temporal-style candidate offsets)
// against an independent brute-force oracle that knows time zones only through
// Intl.DateTimeFormat#formatToParts and finds wall times by scanning instants minute by minute.
// Pure: needs nothing from test/setup.ts, so it runs the same with or without the gateway.
import { expect } from "chai";
import fc from "fast-check";
import { advance, firstRun, nextOccurrence, occurrenceAtOrAfter, type Recurrence } from "../server/schedules/recurrence.js";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const RANGE_START = Date.UTC(2024, 0, 1);
const RANGE_END = Date.UTC(2031, 0, 1);

/** Varied rules: northern/southern DST, 30-minute DST, :45 offsets, negative DST in tzdata
 * (Dublin), transitions at local midnight (Santiago, Havana), a gap that crosses midnight (Nuuk),
 * a two-hour DST (Troll), Ramadan DST (Casablanca), zones that dropped DST (Sao Paulo, Tehran,
 * Apia) and none at all. */
const ZONES = [
  "UTC",
  "America/New_York",
  "Europe/London",
  "Australia/Lord_Howe",
  "Asia/Kathmandu",
  "America/Sao_Paulo",
  "Pacific/Chatham",
  "Europe/Dublin",
  "America/Santiago",
  "Asia/Tehran",
  "Pacific/Apia",
  "Africa/Casablanca",
  "America/St_Johns",
  "Australia/Adelaide",
  "America/Havana",
  "America/Nuuk",
  "Antarctica/Troll",
] as const;

// ---------------------------------------------------------------------------------------------
// The oracle. Nothing here uses luxon or the module under test.

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall clock of `zone` at instant `t`, as milliseconds on a UTC time line. */
function wallClock(zone: string, t: number): number {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  const fields: Record<string, number> = {};
  for (const part of f.formatToParts(t)) if (part.type !== "literal") fields[part.type] = Number(part.value);
  const { year, month, day, hour, minute, second } = fields as Record<"year" | "month" | "day" | "hour" | "minute" | "second", number>;
  return Date.UTC(year, month - 1, day, hour % 24, minute, second);
}

/** Civil date of a day number (days since 1970-01-01), by plain Date arithmetic. */
function civil(day: number): { year: number; month: number; date: number; weekday: number } {
  const d = new Date(day * DAY);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth(), date: d.getUTCDate(), weekday: d.getUTCDay() };
}

function oracleRuleFires(rule: Recurrence, day: number): boolean {
  const { year, month, date, weekday } = civil(day);
  if (rule.type === "daily") return true;
  if (rule.type === "weekly") return rule.days_of_week.includes(weekday);
  const monthLength = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return rule.day_of_month === -1 ? date === monthLength : date === rule.day_of_month;
}

/**
 * The instant at which `zone`'s wall clock reads `wall` (ms on a UTC line, whole minutes). Finds
 * the zone's smallest and largest offsets around that wall time by hourly sampling, then scans
 * every minute in which the wall time could fall. First exact match wins (the earlier of a
 * repeated time); if the clock jumps over `wall` (a gap), the answer is where the clock would
 * have read `wall` had it kept running at the pre-gap offset.
 */
function oracleInstantOfWall(zone: string, wall: number): number {
  let minOffset = Infinity;
  let maxOffset = -Infinity;
  for (let t = wall - 16 * HOUR; t <= wall + 16 * HOUR; t += HOUR) {
    const offset = wallClock(zone, t) - t;
    minOffset = Math.min(minOffset, offset);
    maxOffset = Math.max(maxOffset, offset);
  }
  let previous: { t: number; wall: number } | undefined;
  for (let t = wall - maxOffset - MIN; t <= wall - minOffset + MIN; t += MIN) {
    const w = wallClock(zone, t);
    if (w === wall) return t;
    if (previous && previous.wall < wall && w > wall) return previous.t + (wall - previous.wall);
    previous = { t, wall: w };
  }
  throw new Error(`oracle: no instant for ${new Date(wall).toISOString()} in ${zone}`);
}

/** First occurrence at or after (or strictly after) `from`, by walking local calendar days. */
function oracleOccurrence(rule: Recurrence, zone: string, from: number, strict = false): number {
  const fromDay = Math.floor(wallClock(zone, from) / DAY);
  for (let day = fromDay - 2; day < fromDay + 1500; day++) {
    if (!oracleRuleFires(rule, day)) continue;
    const t = oracleInstantOfWall(zone, day * DAY + (rule.hour * 60 + rule.minute) * MIN);
    if (strict ? t > from : t >= from) return t;
  }
  throw new Error("oracle: no occurrence");
}

// ---------------------------------------------------------------------------------------------
// Offset transitions per zone in the range, so that generated instants and wall times cluster
// around them (found with the oracle's clock: daily samples, then bisection to the minute).

interface Transition {
  at: number;
  offsetBefore: number;
  offsetAfter: number;
}

const transitionCache = new Map<string, Transition[]>();

function transitions(zone: string): Transition[] {
  let found = transitionCache.get(zone);
  if (found) return found;
  found = [];
  const offsetAt = (t: number) => wallClock(zone, t) - t;
  let t = RANGE_START;
  let offset = offsetAt(t);
  for (let next = t + DAY; next <= RANGE_END; t = next, next += DAY) {
    const nextOffset = offsetAt(next);
    if (nextOffset === offset) continue;
    let lo = t;
    let hi = next;
    while (hi - lo > MIN) {
      const mid = lo + Math.floor((hi - lo) / MIN / 2) * MIN;
      if (offsetAt(mid) === offset) lo = mid;
      else hi = mid;
    }
    found.push({ at: hi, offsetBefore: offset, offsetAfter: nextOffset });
    offset = nextOffset;
  }
  transitionCache.set(zone, found);
  return found;
}

// ---------------------------------------------------------------------------------------------
// Generators.

interface Scenario {
  zone: string;
  rule: Recurrence;
  from: number;
}

const rawScenario = fc.record({
  zone: fc.constantFrom(...ZONES),
  nearTransition: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
  transitionIndex: fc.nat(),
  // Mostly within the day before the transition, so the transition day's occurrence is next.
  minutesFromTransition: fc.oneof(fc.integer({ min: -26 * 60, max: 60 }), fc.integer({ min: -3 * 1440, max: 3 * 1440 })),
  subMinute: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: MIN - 1 })),
  uniformInstant: fc.integer({ min: RANGE_START, max: RANGE_END - 1 }),
  alignTime: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
  // Where the rule's wall time sits: inside the gap / repeated hour (as a fraction of it), or
  // within 150 minutes of the pre-transition clock.
  insideTransition: fc.oneof({ arbitrary: fc.constant(true), weight: 2 }, { arbitrary: fc.constant(false), weight: 1 }),
  fractionOfTransition: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  minutesFromTransitionWall: fc.integer({ min: -150, max: 150 }),
  hour: fc.integer({ min: 0, max: 23 }),
  minute: fc.oneof(fc.constantFrom(0, 15, 30, 45, 59), fc.integer({ min: 0, max: 59 })),
  shape: fc.constantFrom("daily", "weekly", "monthly"),
  alignDay: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
  days: fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 7 }),
  dayOfMonth: fc.oneof(fc.integer({ min: 1, max: 31 }), fc.constantFrom(-1, 28, 29, 30, 31)),
});

const scenarioArb: fc.Arbitrary<Scenario> = rawScenario.map((raw) => {
  const zone = raw.zone;
  const list = transitions(zone);
  const transition = raw.nearTransition && list.length > 0 ? list[raw.transitionIndex % list.length] : undefined;
  const from = transition ? transition.at + raw.minutesFromTransition * MIN + raw.subMinute : raw.uniformInstant;
  // The wall time the clock showed just before the transition (or at `from`): rule times and days
  // aligned to it land in gaps and repeated hours.
  const anchorWall = transition ? transition.at + transition.offsetBefore : wallClock(zone, from);
  let minuteOfDay = raw.hour * 60 + raw.minute;
  if (raw.alignTime) {
    const anchorMinute = Math.floor((anchorWall % DAY) / MIN);
    // A gap is the wall times [before, before + shift), a repeated hour [before + shift, before).
    const shift = transition ? (transition.offsetAfter - transition.offsetBefore) / MIN : 0;
    const delta =
      transition && raw.insideTransition
        ? Math.floor(Math.min(0, shift) + raw.fractionOfTransition * Math.abs(shift))
        : raw.minutesFromTransitionWall;
    minuteOfDay = (((anchorMinute + delta) % 1440) + 1440) % 1440;
  }
  const time = { hour: Math.floor(minuteOfDay / 60), minute: minuteOfDay % 60 };
  const anchor = civil(Math.floor(anchorWall / DAY));
  let rule: Recurrence;
  if (raw.shape === "daily") rule = { type: "daily", ...time };
  else if (raw.shape === "weekly") {
    const days = raw.alignDay && !raw.days.includes(anchor.weekday) ? [...raw.days, anchor.weekday] : raw.days;
    rule = { type: "weekly", ...time, days_of_week: days };
  } else {
    const lastDay = new Date(Date.UTC(anchor.year, anchor.month + 1, 0)).getUTCDate();
    const aligned = anchor.date === lastDay && raw.dayOfMonth === -1 ? -1 : anchor.date;
    rule = { type: "monthly", ...time, day_of_month: raw.alignDay ? aligned : raw.dayOfMonth };
  }
  return { zone, rule, from };
});

const iso = (t: number | Date | null) => (t === null ? null : new Date(t).toISOString());

const NUM_RUNS = 300;

describe("recurrence properties (fast-check vs an Intl brute-force oracle)", function () {
  this.timeout(60_000);

  before(() => {
    for (const zone of ZONES) transitions(zone);
    // The generators only help if the zones really have transitions in range.
    expect(transitions("America/New_York")).to.have.length(14);
    expect(transitions("Australia/Lord_Howe")).to.have.length(14);
    expect(transitions("UTC")).to.have.length(0);
  });

  it("the oracle itself reproduces known answers", () => {
    const daily = (hour: number, minute: number): Recurrence => ({ type: "daily", hour, minute });
    expect(iso(oracleOccurrence(daily(2, 30), "America/New_York", Date.UTC(2026, 2, 8)))).to.equal("2026-03-08T07:30:00.000Z");
    expect(iso(oracleOccurrence(daily(1, 30), "America/New_York", Date.UTC(2026, 10, 1)))).to.equal("2026-11-01T05:30:00.000Z");
    expect(iso(oracleOccurrence(daily(2, 15), "Australia/Lord_Howe", Date.UTC(2026, 9, 3)))).to.equal("2026-10-03T15:45:00.000Z");
  });

  it("occurrenceAtOrAfter equals the oracle's first occurrence at or after `from`", () => {
    fc.assert(
      fc.property(scenarioArb, ({ zone, rule, from }) => {
        expect(iso(occurrenceAtOrAfter(rule, zone, new Date(from)))).to.equal(iso(oracleOccurrence(rule, zone, from)));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("nextOccurrence equals the oracle's first occurrence strictly after, also from an occurrence itself", () => {
    fc.assert(
      fc.property(scenarioArb, fc.boolean(), ({ zone, rule, from }, fromAnOccurrence) => {
        const after = fromAnOccurrence ? oracleOccurrence(rule, zone, from) : from;
        expect(iso(nextOccurrence(rule, zone, new Date(after)))).to.equal(iso(oracleOccurrence(rule, zone, after, true)));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("successive occurrences match the oracle step by step: increasing, a repeated wall time fired once", () => {
    fc.assert(
      fc.property(scenarioArb, ({ zone, rule, from }) => {
        let mine = occurrenceAtOrAfter(rule, zone, new Date(from)).getTime();
        let theirs = oracleOccurrence(rule, zone, from);
        const seen: number[] = [];
        for (let step = 0; step < 6; step++) {
          expect(iso(mine), `step ${step}`).to.equal(iso(theirs));
          if (seen.length > 0) expect(mine).to.be.greaterThan(seen[seen.length - 1]!);
          seen.push(mine);
          mine = nextOccurrence(rule, zone, new Date(mine)).getTime();
          theirs = oracleOccurrence(rule, zone, theirs, true);
        }
        // A repeated wall time never fires twice: no two occurrences show the same wall clock.
        // (Local dates need not be distinct: in America/Nuuk a 23:00 in the Saturday-night gap
        // fires at Sunday 00:00, and Sunday's own 23:00 follows the same local day.)
        const walls = seen.map((t) => wallClock(zone, t));
        expect(new Set(walls).size).to.equal(walls.length);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("advance fires once and drops the backlog, and completes on max_occurrences or ends_at", () => {
    fc.assert(
      fc.property(
        scenarioArb,
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 90 * 1440 })),
        fc.option(fc.integer({ min: 0, max: 120 * 1440 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
        fc.integer({ min: 1, max: 20 }),
        ({ zone, rule, from }, lagMinutes, endsInMinutes, maxOccurrences, occurrences) => {
          const firedAt = oracleOccurrence(rule, zone, from);
          const now = firedAt + lagMinutes * MIN;
          const endsAt = endsInMinutes === undefined ? undefined : firedAt + endsInMinutes * MIN;
          const result = advance({
            rule,
            timeZone: zone,
            firedAt: new Date(firedAt),
            now: new Date(now),
            endsAt: endsAt === undefined ? undefined : new Date(endsAt),
            maxOccurrences,
            occurrences,
          });
          const next = oracleOccurrence(rule, zone, Math.max(firedAt, now), true);
          const completed = (maxOccurrences !== undefined && occurrences >= maxOccurrences) || (endsAt !== undefined && next > endsAt);
          expect({ nextRunAt: iso(result.nextRunAt), completed: result.completed }).to.deep.equal({
            nextRunAt: completed ? null : iso(next),
            completed,
          });
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it("firstRun is the first occurrence at or after max(starts_at, now), or null when it never fires", () => {
    fc.assert(
      fc.property(
        scenarioArb,
        fc.option(fc.integer({ min: -30 * 1440, max: 60 * 1440 }), { nil: undefined }),
        fc.option(fc.integer({ min: -30 * 1440, max: 90 * 1440 }), { nil: undefined }),
        ({ zone, rule, from: now }, startOffset, endOffset) => {
          const startsAt = startOffset === undefined ? undefined : now + startOffset * MIN;
          const endsAt = endOffset === undefined ? undefined : now + endOffset * MIN;
          const start = startsAt ?? now;
          const first = oracleOccurrence(rule, zone, Math.max(start, now));
          const expected = endsAt !== undefined && (start >= endsAt || first > endsAt) ? null : first;
          const result = firstRun({
            rule,
            timeZone: zone,
            now: new Date(now),
            startsAt: startsAt === undefined ? undefined : new Date(startsAt),
            endsAt: endsAt === undefined ? undefined : new Date(endsAt),
          });
          expect(iso(result)).to.equal(iso(expected));
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });
});
