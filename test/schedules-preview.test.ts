// POST /v1/schedules/preview (an extension): the next five runs a create body's timing
// would give, from the scheduler's own rule — across daylight-saving changes the local time stays
// and the offset moves; ends_at and max_occurrences cut the list short at their exact bounds; the
// 400s are create's own; nothing is written. Dates lie in 2030 so that "now" never overtakes them.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { PreviewScheduleBody, SchedulePreview } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { http, newWorkspace, type TestWorkspace } from "./support/actors.js";

type Body = Record<string, unknown>;
type Problem = { code?: string; detail?: string; errors?: { path: string; message: string }[] };

describe("schedule preview (extension)", () => {
  let ws: TestWorkspace;
  let auth: Record<string, string>;
  let slug: string;
  const preview = (body: unknown, headers = auth) => http("POST", "/v1/schedules/preview", { body, headers });
  const runs = async (body: Body) => {
    const res = await preview(body);
    expect(res.status, res.text).to.equal(200);
    return (res.json as SchedulePreview).runs;
  };
  const daily = (hour: number, minute: number) => ({ type: "daily", hour, minute });

  before(async () => {
    ws = await newWorkspace("pro");
    const { client, key } = await ws.key(["schedules:read", "schedules:write", "connections:write"]);
    auth = { authorization: `Bearer ${key}` };
    slug = `p-${randomBytes(3).toString("hex")}`;
    await expectOk(client.connections.create({ body: { slug } }));
  });

  it("keeps 09:00 in New York across the March change while the offset goes from -05:00 to -04:00", async () => {
    const list = await runs({ timezone: "America/New_York", recurrence: daily(9, 0), starts_at: "2030-03-08T00:00:00Z" });
    expect(list).to.deep.equal([
      { at: "2030-03-08T14:00:00.000Z", local: "2030-03-08T09:00:00-05:00" },
      { at: "2030-03-09T14:00:00.000Z", local: "2030-03-09T09:00:00-05:00" },
      { at: "2030-03-10T13:00:00.000Z", local: "2030-03-10T09:00:00-04:00" },
      { at: "2030-03-11T13:00:00.000Z", local: "2030-03-11T09:00:00-04:00" },
      { at: "2030-03-12T13:00:00.000Z", local: "2030-03-12T09:00:00-04:00" },
    ]);
  });

  it("keeps 09:00 in New York across the November change while the offset goes from -04:00 to -05:00", async () => {
    const list = await runs({ timezone: "America/New_York", recurrence: daily(9, 0), starts_at: "2030-11-01T00:00:00Z" });
    expect(list.map((r) => r.local)).to.deep.equal([
      "2030-11-01T09:00:00-04:00",
      "2030-11-02T09:00:00-04:00",
      "2030-11-03T09:00:00-05:00",
      "2030-11-04T09:00:00-05:00",
      "2030-11-05T09:00:00-05:00",
    ]);
    expect(list.map((r) => r.at)).to.deep.equal([
      "2030-11-01T13:00:00.000Z",
      "2030-11-02T13:00:00.000Z",
      "2030-11-03T14:00:00.000Z",
      "2030-11-04T14:00:00.000Z",
      "2030-11-05T14:00:00.000Z",
    ]);
  });

  it("applies the scheduler's rule inside the changes: a skipped 02:30 runs at 03:30, a repeated 01:30 once, the earlier", async () => {
    const spring = await runs({ timezone: "America/New_York", recurrence: daily(2, 30), starts_at: "2030-03-09T12:00:00Z", max_occurrences: 2 });
    expect(spring).to.deep.equal([
      { at: "2030-03-10T07:30:00.000Z", local: "2030-03-10T03:30:00-04:00" },
      { at: "2030-03-11T06:30:00.000Z", local: "2030-03-11T02:30:00-04:00" },
    ]);
    const fall = await runs({ timezone: "America/New_York", recurrence: daily(1, 30), starts_at: "2030-11-02T12:00:00Z", max_occurrences: 2 });
    expect(fall).to.deep.equal([
      { at: "2030-11-03T05:30:00.000Z", local: "2030-11-03T01:30:00-04:00" },
      { at: "2030-11-04T06:30:00.000Z", local: "2030-11-04T01:30:00-05:00" },
    ]);
  });

  it("gives weekly and monthly rules in the zone, and +00:00 (not Z) for UTC", async () => {
    const weekly = await runs({ timezone: "Asia/Kathmandu", recurrence: { type: "weekly", hour: 8, minute: 15, days_of_week: [1, 5] }, starts_at: "2030-01-01T00:00:00Z" });
    // 2030-01-01 is a Tuesday: Friday 4th, Monday 7th, Friday 11th, …
    expect(weekly.map((r) => r.local)).to.deep.equal([
      "2030-01-04T08:15:00+05:45",
      "2030-01-07T08:15:00+05:45",
      "2030-01-11T08:15:00+05:45",
      "2030-01-14T08:15:00+05:45",
      "2030-01-18T08:15:00+05:45",
    ]);
    const lastDay = await runs({ timezone: "UTC", recurrence: { type: "monthly", hour: 0, minute: 0, day_of_month: -1 }, starts_at: "2030-01-01T00:00:00Z" });
    expect(lastDay.map((r) => r.local)).to.deep.equal([
      "2030-01-31T00:00:00+00:00",
      "2030-02-28T00:00:00+00:00",
      "2030-03-31T00:00:00+00:00",
      "2030-04-30T00:00:00+00:00",
      "2030-05-31T00:00:00+00:00",
    ]);
  });

  it("starts where create does: the first run is the next_run_at a create with the same fields answers", async () => {
    const timing = { timezone: "Europe/Berlin", recurrence: daily(7, 45) };
    const [first] = await runs(timing);
    const created = await http("POST", "/v1/schedules", {
      body: { name: "compare", ...timing, message: { connection: slug, to: "+15550001111", body: "hi" } },
      headers: auth,
    });
    expect(created.status, created.text).to.equal(201);
    expect(first!.at).to.equal(created.json.next_run_at);
  });

  describe("ends_at and max_occurrences cut the list short", () => {
    const base = { timezone: "UTC", recurrence: daily(9, 0), starts_at: "2030-01-01T00:00:00Z" };
    it("ends_at exactly at the third run keeps it (inclusive); a second earlier drops it", async () => {
      expect((await runs({ ...base, ends_at: "2030-01-03T09:00:00Z" })).map((r) => r.at)).to.deep.equal([
        "2030-01-01T09:00:00.000Z",
        "2030-01-02T09:00:00.000Z",
        "2030-01-03T09:00:00.000Z",
      ]);
      expect(await runs({ ...base, ends_at: "2030-01-03T08:59:59Z" })).to.have.lengthOf(2);
      expect(await runs({ ...base, ends_at: "2030-01-01T09:00:00Z" })).to.have.lengthOf(1);
    });
    it("an ends_at after the fifth run, or none, lists five", async () => {
      expect(await runs({ ...base, ends_at: "2030-01-05T09:00:00Z" })).to.have.lengthOf(5);
      expect(await runs({ ...base, ends_at: "2031-01-01T00:00:00Z" })).to.have.lengthOf(5);
      expect(await runs(base)).to.have.lengthOf(5);
    });
    it("runs stop at 9999-12-31T23:59:59Z: the last day of year 9999 is listed, nothing after it", async () => {
      expect((await runs({ timezone: "UTC", recurrence: daily(9, 0), starts_at: "9999-12-29T00:00:00Z" })).map((r) => r.at)).to.deep.equal([
        "9999-12-29T09:00:00.000Z",
        "9999-12-30T09:00:00.000Z",
        "9999-12-31T09:00:00.000Z",
      ]);
      expect((await runs({ timezone: "UTC", recurrence: daily(23, 59), starts_at: "9999-12-31T23:59:00Z" })).map((r) => r.at)).to.deep.equal([
        "9999-12-31T23:59:00.000Z",
      ]);
    });
    it("max_occurrences 1 lists one, 4 lists four, 5 and 10000 list five", async () => {
      expect(await runs({ ...base, max_occurrences: 1 })).to.have.lengthOf(1);
      expect(await runs({ ...base, max_occurrences: 4 })).to.have.lengthOf(4);
      expect(await runs({ ...base, max_occurrences: 5 })).to.have.lengthOf(5);
      expect(await runs({ ...base, max_occurrences: 10000 })).to.have.lengthOf(5);
    });
  });

  describe("refusals are create's own", () => {
    const message = () => ({ connection: slug, to: "+15550001111", body: "hi" });
    /** Preview and create of the same timing fields both answer 400 with the same problem. */
    const sameAsCreate = async (timing: Body, path: string) => {
      const p = await preview(timing);
      const c = await http("POST", "/v1/schedules", { body: { name: "x", message: message(), ...timing }, headers: auth });
      expect(p.status, p.text).to.equal(400);
      expect(c.status, c.text).to.equal(400);
      const [pj, cj] = [p.json as Problem, c.json as Problem];
      expect(pj.code).to.equal("validation_failed");
      expect(pj.errors).to.deep.equal(cj.errors);
      expect(pj.detail).to.equal(cj.detail);
      expect(pj.errors!.map((e) => e.path)).to.include(path);
      expect(p.headers.get("content-type")).to.match(/^application\/problem\+json/);
    };

    it("an unknown time zone", () => sameAsCreate({ timezone: "Mars/Phobos", recurrence: daily(9, 0) }, "body.timezone"));
    it("a 65-character time zone", () => sameAsCreate({ timezone: `Europe/${"x".repeat(58)}`, recurrence: daily(9, 0) }, "body.timezone"));
    it("an hour of 24 (23 is fine)", async () => {
      expect(await runs({ timezone: "UTC", recurrence: daily(23, 59) })).to.have.lengthOf(5);
      await sameAsCreate({ timezone: "UTC", recurrence: daily(24, 0) }, "body.recurrence.hour");
    });
    it("a recurrence of an unknown type", () => sameAsCreate({ timezone: "UTC", recurrence: { type: "yearly", hour: 1, minute: 0 } }, "body.recurrence.type"));
    it("ends_at before starts_at: it would never fire", () =>
      sameAsCreate({ timezone: "UTC", recurrence: daily(9, 0), starts_at: "2030-01-02T00:00:00Z", ends_at: "2030-01-01T00:00:00Z" }, "body.ends_at"));
    it("no occurrence between starts_at and ends_at", () =>
      sameAsCreate({ timezone: "UTC", recurrence: daily(9, 0), starts_at: "2030-01-01T09:00:01Z", ends_at: "2030-01-02T08:59:59Z" }, "body.recurrence"));
    it("a first run after 9999-12-31T23:59:59Z: it would never fire (one minute earlier it does)", async () => {
      await sameAsCreate({ timezone: "UTC", recurrence: daily(9, 0), starts_at: "9999-12-31T23:59:59Z" }, "body.recurrence");
      await sameAsCreate({ timezone: "UTC", recurrence: daily(23, 59), starts_at: "9999-12-31T23:59:01Z" }, "body.recurrence");
      const c = await http("POST", "/v1/schedules", {
        body: { name: "y9999", message: message(), timezone: "UTC", recurrence: daily(23, 59), starts_at: "9999-12-31T23:59:00Z" },
        headers: auth,
      });
      expect(c.status, c.text).to.equal(201);
      expect(c.json.next_run_at).to.equal("9999-12-31T23:59:00.000Z");
    });
    it("max_occurrences 0 and 10001", async () => {
      await sameAsCreate({ timezone: "UTC", recurrence: daily(9, 0), max_occurrences: 0 }, "body.max_occurrences");
      await sameAsCreate({ timezone: "UTC", recurrence: daily(9, 0), max_occurrences: 10001 }, "body.max_occurrences");
    });

    it("a time zone with a lone UTF-16 surrogate: 400 naming it, never a 5xx", async () => {
      const res = await preview({ timezone: "Europe/\ud800", recurrence: daily(9, 0) });
      expect(res.status, res.text).to.equal(400);
      expect((res.json as Problem).errors!.map((e) => e.path)).to.deep.equal(["body.timezone"]);
    });

    it("fields beyond the timing ones (name, message) are refused: the body is strict", async () => {
      const res = await preview({ timezone: "UTC", recurrence: daily(9, 0), name: "n" });
      expect(res.status, res.text).to.equal(400);
      expect((res.json as Problem).code).to.equal("validation_failed");
      const missing = await preview({ recurrence: daily(9, 0) });
      expect(missing.status).to.equal(400);
      expect((missing.json as Problem).errors!.map((e) => e.path)).to.include("body.timezone");
    });
  });

  it("writes nothing, and serves a dashboard session (a viewer's too) as well as a key", async () => {
    const before = await http("GET", "/v1/schedules", { headers: auth });
    const timing: PreviewScheduleBody = { timezone: "Europe/Lisbon", recurrence: { type: "daily", hour: 12, minute: 0 }, starts_at: "2030-06-01T00:00:00Z" };
    const byKey = await runs(timing);
    const bySession = await expectOk(ws.owner.client.schedules.preview({ body: timing }));
    expect(bySession.runs).to.deep.equal(byKey);
    const viewer = await ws.addMember("viewer");
    expect((await expectOk(viewer.client.schedules.preview({ body: timing }))).runs).to.deep.equal(byKey);
    const after = await http("GET", "/v1/schedules", { headers: auth });
    expect(after.json.data).to.deep.equal(before.json.data);
  });
});
