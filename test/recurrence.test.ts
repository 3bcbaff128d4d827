// Concrete cases for the recurrence module (docs/schedules.md). Pure: needs nothing from
// test/setup.ts, so it runs the same with or without the gateway.
import { expect } from "chai";
import {
  advance,
  firstRun,
  isValidTimeZone,
  nextOccurrence,
  occurrenceAtOrAfter,
  resumeFrom,
  type Recurrence,
} from "../server/schedules/recurrence.js";

const at = (iso: string) => new Date(iso);
const daily = (hour: number, minute: number): Recurrence => ({ type: "daily", hour, minute });
const weekly = (hour: number, minute: number, days_of_week: number[]): Recurrence => ({ type: "weekly", hour, minute, days_of_week });
const monthly = (hour: number, minute: number, day_of_month: number): Recurrence => ({ type: "monthly", hour, minute, day_of_month });

/** The first `count` occurrences at or after `from`, as ISO strings. */
function series(rule: Recurrence, zone: string, from: string, count: number): string[] {
  const out: string[] = [];
  let next = occurrenceAtOrAfter(rule, zone, at(from));
  for (let i = 0; i < count; i++) {
    out.push(next.toISOString());
    next = nextOccurrence(rule, zone, next);
  }
  return out;
}

const first = (rule: Recurrence, zone: string, from: string) => occurrenceAtOrAfter(rule, zone, at(from)).toISOString();

describe("recurrence", () => {
  describe("daylight saving time", () => {
    it("America/New_York spring forward (2026-03-08): 02:30 does not exist and fires at 03:30 EDT; 01:30 is plain EST", () => {
      expect(series(daily(2, 30), "America/New_York", "2026-03-07T00:00:00Z", 3)).to.deep.equal([
        "2026-03-07T07:30:00.000Z", // 02:30 EST
        "2026-03-08T07:30:00.000Z", // 03:30 EDT (02:30 + the one-hour gap)
        "2026-03-09T06:30:00.000Z", // 02:30 EDT
      ]);
      expect(series(daily(1, 30), "America/New_York", "2026-03-08T00:00:00Z", 2)).to.deep.equal([
        "2026-03-08T06:30:00.000Z", // 01:30 EST, just before the gap
        "2026-03-09T05:30:00.000Z", // 01:30 EDT
      ]);
    });

    it("America/New_York fall back (2026-11-01): 01:30 happens twice and fires once, at the first (EDT); 02:30 is plain EST", () => {
      expect(series(daily(1, 30), "America/New_York", "2026-10-31T12:00:00Z", 3)).to.deep.equal([
        "2026-11-01T05:30:00.000Z", // 01:30 EDT; the 01:30 EST an hour later does not fire
        "2026-11-02T06:30:00.000Z",
        "2026-11-03T06:30:00.000Z",
      ]);
      // Between the two 01:30s (01:00 EST): the repeat is not an occurrence.
      expect(first(daily(1, 30), "America/New_York", "2026-11-01T06:00:00Z")).to.equal("2026-11-02T06:30:00.000Z");
      expect(first(daily(2, 30), "America/New_York", "2026-11-01T00:00:00Z")).to.equal("2026-11-01T07:30:00.000Z");
    });

    it("Europe/London: 01:30 on 2026-03-29 is in the gap (fires 02:30 BST); on 2026-10-25 it fires once, at 01:30 BST", () => {
      expect(series(daily(1, 30), "Europe/London", "2026-03-28T12:00:00Z", 2)).to.deep.equal([
        "2026-03-29T01:30:00.000Z", // 02:30 BST
        "2026-03-30T00:30:00.000Z", // 01:30 BST
      ]);
      expect(series(daily(1, 30), "Europe/London", "2026-10-24T12:00:00Z", 3)).to.deep.equal([
        "2026-10-25T00:30:00.000Z", // 01:30 BST, not 01:30 GMT
        "2026-10-26T01:30:00.000Z",
        "2026-10-27T01:30:00.000Z",
      ]);
    });

    it("Australia/Lord_Howe moves by 30 minutes: 02:15 in the October gap fires at 02:45; 01:45 in April fires once, at +11:00", () => {
      // 2026-10-04 (first Sunday of October): 02:00 +10:30 becomes 02:30 +11:00.
      expect(series(daily(2, 15), "Australia/Lord_Howe", "2026-10-02T12:00:00Z", 3)).to.deep.equal([
        "2026-10-02T15:45:00.000Z", // 02:15 +10:30 on the 3rd
        "2026-10-03T15:45:00.000Z", // 02:45 +11:00 on the 4th (02:15 + the 30-minute gap)
        "2026-10-04T15:15:00.000Z", // 02:15 +11:00 on the 5th
      ]);
      // 2026-04-05 (first Sunday of April): 02:00 +11:00 becomes 01:30 +10:30; 01:45 happens twice.
      expect(series(daily(1, 45), "Australia/Lord_Howe", "2026-04-04T00:00:00Z", 2)).to.deep.equal([
        "2026-04-04T14:45:00.000Z", // 01:45 +11:00
        "2026-04-05T15:15:00.000Z", // next day, 01:45 +10:30 — not the repeat at 2026-04-04T15:15Z
      ]);
      expect(first(daily(1, 45), "Australia/Lord_Howe", "2026-04-04T14:50:00Z")).to.equal("2026-04-05T15:15:00.000Z");
    });

    it("Asia/Kathmandu (+05:45, no DST): 09:00 is 03:15Z all year", () => {
      expect(first(daily(9, 0), "Asia/Kathmandu", "2026-01-10T00:00:00Z")).to.equal("2026-01-10T03:15:00.000Z");
      expect(first(daily(9, 0), "Asia/Kathmandu", "2026-07-10T04:00:00Z")).to.equal("2026-07-11T03:15:00.000Z");
    });

    it("America/Nuuk's gap crosses midnight: Saturday 23:30 fires at Sunday 00:30 (-01:00)", () => {
      // 2026-03-28 23:00 -02:00 (Saturday) becomes 2026-03-29 00:00 -01:00.
      expect(series(weekly(23, 30, [6]), "America/Nuuk", "2026-03-27T00:00:00Z", 2)).to.deep.equal([
        "2026-03-29T01:30:00.000Z", // Sunday 00:30 -01:00
        "2026-04-05T00:30:00.000Z", // Saturday 23:30 -01:00
      ]);
    });

    it("America/Santiago changes at midnight: Sunday 00:30 in September's gap fires at 01:30", () => {
      // 2026-09-06 00:00 -04:00 becomes 01:00 -03:00.
      expect(first(daily(0, 30), "America/Santiago", "2026-09-05T12:00:00Z")).to.equal("2026-09-06T04:30:00.000Z");
    });
  });

  describe("weekly", () => {
    it("Monday 09:00 Europe/Berlin from a Wednesday lands on the next Monday, in summer time after 2026-03-29", () => {
      expect(series(weekly(9, 0, [1]), "Europe/Berlin", "2026-03-25T12:00:00Z", 3)).to.deep.equal([
        "2026-03-30T07:00:00.000Z", // 09:00 CEST
        "2026-04-06T07:00:00.000Z",
        "2026-04-13T07:00:00.000Z",
      ]);
      expect(first(weekly(9, 0, [1]), "Europe/Berlin", "2026-03-16T08:00:00Z")).to.equal("2026-03-16T08:00:00.000Z"); // at, CET
    });

    it("several days, in any order; 0 is Sunday and 6 Saturday", () => {
      expect(series(weekly(18, 0, [5, 0, 3]), "UTC", "2026-06-01T00:00:00Z", 4)).to.deep.equal([
        "2026-06-03T18:00:00.000Z", // Wednesday
        "2026-06-05T18:00:00.000Z", // Friday
        "2026-06-07T18:00:00.000Z", // Sunday
        "2026-06-10T18:00:00.000Z",
      ]);
      expect(first(weekly(0, 0, [6]), "UTC", "2026-06-01T00:00:00Z")).to.equal("2026-06-06T00:00:00.000Z");
    });

    it("refuses repeated or out-of-range days", () => {
      expect(() => first(weekly(9, 0, [1, 1]), "UTC", "2026-01-01T00:00:00Z")).to.throw(RangeError);
      expect(() => first(weekly(9, 0, [7]), "UTC", "2026-01-01T00:00:00Z")).to.throw(RangeError);
      expect(() => first(weekly(9, 0, []), "UTC", "2026-01-01T00:00:00Z")).to.throw(RangeError);
    });
  });

  describe("monthly", () => {
    it("day 31 skips the months without one (February, April, June, September, November)", () => {
      expect(series(monthly(12, 0, 31), "UTC", "2026-01-01T00:00:00Z", 8)).to.deep.equal([
        "2026-01-31T12:00:00.000Z",
        "2026-03-31T12:00:00.000Z",
        "2026-05-31T12:00:00.000Z",
        "2026-07-31T12:00:00.000Z",
        "2026-08-31T12:00:00.000Z",
        "2026-10-31T12:00:00.000Z",
        "2026-12-31T12:00:00.000Z",
        "2027-01-31T12:00:00.000Z",
      ]);
    });

    it("-1 is the last day of every month: Feb 28 in 2027, Feb 29 in 2028", () => {
      expect(series(monthly(8, 0, -1), "Europe/Paris", "2027-01-15T00:00:00Z", 4)).to.deep.equal([
        "2027-01-31T07:00:00.000Z",
        "2027-02-28T07:00:00.000Z",
        "2027-03-31T06:00:00.000Z", // Paris is on summer time by the 31st
        "2027-04-30T06:00:00.000Z",
      ]);
      expect(first(monthly(8, 0, -1), "UTC", "2028-02-01T00:00:00Z")).to.equal("2028-02-29T08:00:00.000Z");
    });

    it("day 29 skips February except in leap years; day 30 always skips February", () => {
      expect(first(monthly(10, 0, 29), "UTC", "2026-01-30T00:00:00Z")).to.equal("2026-03-29T10:00:00.000Z");
      expect(first(monthly(10, 0, 29), "UTC", "2028-01-30T00:00:00Z")).to.equal("2028-02-29T10:00:00.000Z");
      expect(first(monthly(10, 0, 30), "UTC", "2028-01-31T00:00:00Z")).to.equal("2028-03-30T10:00:00.000Z");
    });

    it("the monthly date is the local date: 31 January 00:30 in Auckland is 30 January in UTC", () => {
      expect(first(monthly(0, 30, 31), "Pacific/Auckland", "2026-01-01T00:00:00Z")).to.equal("2026-01-30T11:30:00.000Z");
    });
  });

  describe("occurrence bounds", () => {
    it("at or after is inclusive, next is strict, and seconds in `from` count", () => {
      expect(first(daily(9, 0), "UTC", "2026-05-01T09:00:00Z")).to.equal("2026-05-01T09:00:00.000Z");
      expect(first(daily(9, 0), "UTC", "2026-05-01T09:00:00.001Z")).to.equal("2026-05-02T09:00:00.000Z");
      expect(nextOccurrence(daily(9, 0), "UTC", at("2026-05-01T09:00:00Z")).toISOString()).to.equal("2026-05-02T09:00:00.000Z");
      expect(nextOccurrence(daily(9, 0), "UTC", at("2026-05-01T08:59:59.999Z")).toISOString()).to.equal("2026-05-01T09:00:00.000Z");
    });

    it("refuses unknown zones, invalid instants and out-of-range times", () => {
      expect(() => first(daily(9, 0), "Mars/Phobos", "2026-01-01T00:00:00Z")).to.throw(RangeError);
      expect(() => occurrenceAtOrAfter(daily(9, 0), "UTC", new Date(Number.NaN))).to.throw(RangeError);
      expect(() => first(daily(24, 0), "UTC", "2026-01-01T00:00:00Z")).to.throw(RangeError);
      expect(() => first(monthly(9, 0, 0), "UTC", "2026-01-01T00:00:00Z")).to.throw(RangeError);
    });
  });

  describe("firstRun", () => {
    const rule = daily(9, 0);
    const now = at("2026-05-01T12:00:00Z");

    it("defaults to the first occurrence at or after now", () => {
      expect(firstRun({ rule, timeZone: "UTC", now })?.toISOString()).to.equal("2026-05-02T09:00:00.000Z");
    });

    it("starts at starts_at when it is in the future, and a starts_at in the past behaves like now", () => {
      expect(firstRun({ rule, timeZone: "UTC", now, startsAt: at("2026-06-10T09:00:00Z") })?.toISOString()).to.equal("2026-06-10T09:00:00.000Z");
      expect(firstRun({ rule, timeZone: "UTC", now, startsAt: at("2026-01-01T00:00:00Z") })?.toISOString()).to.equal("2026-05-02T09:00:00.000Z");
    });

    it("fires at ends_at itself, and never after it", () => {
      expect(firstRun({ rule, timeZone: "UTC", now, endsAt: at("2026-05-02T09:00:00Z") })?.toISOString()).to.equal("2026-05-02T09:00:00.000Z");
      expect(firstRun({ rule, timeZone: "UTC", now, endsAt: at("2026-05-02T08:59:59Z") })).to.equal(null);
    });

    it("is null (never fires → 400) when starts_at ≥ ends_at, or ends_at has passed", () => {
      const t = at("2026-06-10T09:00:00Z");
      expect(firstRun({ rule, timeZone: "UTC", now, startsAt: t, endsAt: t })).to.equal(null);
      expect(firstRun({ rule, timeZone: "UTC", now, startsAt: t, endsAt: at("2026-06-01T00:00:00Z") })).to.equal(null);
      expect(firstRun({ rule, timeZone: "UTC", now, endsAt: at("2026-04-01T00:00:00Z") })).to.equal(null);
      // Starts 10:00, ends 23:00 the same day: the day's 09:00 is before, the next after.
      expect(firstRun({ rule, timeZone: "UTC", now, startsAt: at("2026-06-10T10:00:00Z"), endsAt: at("2026-06-10T23:00:00Z") })).to.equal(null);
      // Monthly 31 within June: there is no 31 June.
      expect(
        firstRun({ rule: monthly(9, 0, 31), timeZone: "UTC", now, startsAt: at("2026-06-01T00:00:00Z"), endsAt: at("2026-06-30T23:59:59Z") }),
      ).to.equal(null);
    });

    it("is null past 9999-12-31T23:59:59Z: the last run of year 9999 is kept, none after it", () => {
      const z = (iso: string) => firstRun({ rule: daily(23, 59), timeZone: "UTC", now, startsAt: at(iso) })?.toISOString() ?? null;
      expect(z("9999-12-31T23:59:00Z")).to.equal("9999-12-31T23:59:00.000Z");
      expect(z("9999-12-31T23:59:01Z")).to.equal(null);
      expect(firstRun({ rule, timeZone: "UTC", now, startsAt: at("9999-12-31T23:59:59Z") })).to.equal(null);
      // The same bound in a zone east of UTC: 9999-12-31 09:00 in Tokyo is 00:00 UTC, still kept.
      expect(firstRun({ rule, timeZone: "Asia/Tokyo", now, startsAt: at("9999-12-30T23:59:59Z") })?.toISOString()).to.equal(
        "9999-12-31T00:00:00.000Z",
      );
      expect(firstRun({ rule, timeZone: "Asia/Tokyo", now, startsAt: at("9999-12-31T00:00:01Z") })).to.equal(null);
    });
  });

  describe("advance", () => {
    const rule = daily(9, 0);
    const firedAt = at("2026-01-01T09:00:00Z");

    it("moves to the next occurrence after the fire", () => {
      expect(advance({ rule, timeZone: "UTC", firedAt, now: at("2026-01-01T09:00:02Z"), occurrences: 1 })).to.deep.equal({
        nextRunAt: at("2026-01-02T09:00:00Z"),
        completed: false,
      });
    });

    it("when behind, fires once and drops the backlog: the next run is after now", () => {
      expect(advance({ rule, timeZone: "UTC", firedAt, now: at("2026-01-05T12:00:00Z"), occurrences: 1 }).nextRunAt?.toISOString()).to.equal(
        "2026-01-06T09:00:00.000Z",
      );
      // Now exactly on a missed occurrence: that one is part of the backlog too.
      expect(advance({ rule, timeZone: "UTC", firedAt, now: at("2026-01-05T09:00:00Z"), occurrences: 1 }).nextRunAt?.toISOString()).to.equal(
        "2026-01-06T09:00:00.000Z",
      );
    });

    it("completes when occurrences reach max_occurrences", () => {
      const now = at("2026-01-01T09:00:01Z");
      expect(advance({ rule, timeZone: "UTC", firedAt, now, maxOccurrences: 3, occurrences: 3 })).to.deep.equal({ nextRunAt: null, completed: true });
      expect(advance({ rule, timeZone: "UTC", firedAt, now, maxOccurrences: 3, occurrences: 2 })).to.deep.equal({
        nextRunAt: at("2026-01-02T09:00:00Z"),
        completed: false,
      });
      expect(advance({ rule, timeZone: "UTC", firedAt, now, maxOccurrences: 1, occurrences: 1 }).completed).to.equal(true);
    });

    it("completes when the next occurrence is after ends_at (an occurrence at ends_at still fires)", () => {
      const now = at("2026-01-01T09:00:01Z");
      expect(advance({ rule, timeZone: "UTC", firedAt, now, endsAt: at("2026-01-02T08:00:00Z"), occurrences: 1 })).to.deep.equal({
        nextRunAt: null,
        completed: true,
      });
      expect(advance({ rule, timeZone: "UTC", firedAt, now, endsAt: at("2026-01-02T09:00:00Z"), occurrences: 1 })).to.deep.equal({
        nextRunAt: at("2026-01-02T09:00:00Z"),
        completed: false,
      });
    });

    it("completes when the next occurrence is after 9999-12-31T23:59:59Z (the run on 9999-12-31 is kept)", () => {
      const now = at("2026-01-01T09:00:01Z");
      expect(advance({ rule, timeZone: "UTC", firedAt: at("9999-12-30T09:00:00Z"), now, occurrences: 1 })).to.deep.equal({
        nextRunAt: at("9999-12-31T09:00:00Z"),
        completed: false,
      });
      expect(advance({ rule, timeZone: "UTC", firedAt: at("9999-12-31T09:00:00Z"), now, occurrences: 2 })).to.deep.equal({
        nextRunAt: null,
        completed: true,
      });
      // An ends_at beyond the bound does not extend it.
      expect(advance({ rule, timeZone: "UTC", firedAt: at("9999-12-31T09:00:00Z"), now, endsAt: at("+010000-06-01T00:00:00Z"), occurrences: 2 })).to.deep.equal(
        { nextRunAt: null, completed: true },
      );
    });
  });

  describe("resumeFrom", () => {
    const rule = daily(9, 0);

    it("computes the next run from now; periods missed while paused are not fired", () => {
      expect(resumeFrom({ rule, timeZone: "UTC", now: at("2026-02-10T10:00:00Z") })).to.deep.equal({
        nextRunAt: at("2026-02-11T09:00:00Z"),
        completed: false,
      });
      // At or after now: resuming exactly on an occurrence keeps it.
      expect(resumeFrom({ rule, timeZone: "UTC", now: at("2026-02-10T09:00:00Z") }).nextRunAt?.toISOString()).to.equal("2026-02-10T09:00:00.000Z");
    });

    it("still honours a future starts_at, and completes past ends_at", () => {
      const now = at("2026-02-10T10:00:00Z");
      expect(resumeFrom({ rule, timeZone: "UTC", now, startsAt: at("2026-03-01T00:00:00Z") }).nextRunAt?.toISOString()).to.equal(
        "2026-03-01T09:00:00.000Z",
      );
      expect(resumeFrom({ rule, timeZone: "UTC", now, endsAt: at("2026-02-11T08:00:00Z") })).to.deep.equal({ nextRunAt: null, completed: true });
    });
  });

  describe("isValidTimeZone", () => {
    it("accepts IANA names, UTC and backward-compatible links", () => {
      for (const name of ["UTC", "Etc/UTC", "Europe/London", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe", "US/Eastern", "Etc/GMT+5"]) {
        expect(isValidTimeZone(name), name).to.equal(true);
      }
    });

    it("rejects unknown names, empty strings, padded names, offsets and ICU-only ids", () => {
      for (const name of ["Mars/Phobos", "", " UTC", "UTC ", "+02:00", "-05:00", "+0200", "UTC+2", "Z", "Local", "SystemV/EST5", "Etc/Unknown"]) {
        expect(isValidTimeZone(name), JSON.stringify(name)).to.equal(false);
      }
    });
  });
});
