// Schedules over HTTP: every field rule of docs/schedules.md at its limits, the message checked as a send
// request at creation, the plan gate, the status filter, tenancy, and every disallowed move of the
// lifecycle (docs/schedules.md). Firing itself is in schedules-firing.test.ts.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { DateTime } from "luxon";
import type { DataSource } from "typeorm";
import type { Schedule } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Client, type TestWorkspace } from "./support/actors.js";
import { waitFor } from "./support/wait.js";

const db = (): DataSource => testEnv().gateway.ctx.db;
const SCOPES = ["schedules:read", "schedules:write", "connections:read", "connections:write", "messages:read"] as const;

interface Actor {
  ws: TestWorkspace;
  client: Client;
  auth: Record<string, string>;
  slug: string;
}

/** A workspace with a key and a connection that exists but was never paired. */
async function actor(plan = "pro"): Promise<Actor> {
  const ws = await newWorkspace(plan);
  const { client, key } = await ws.key([...SCOPES]);
  const slug = `s-${randomBytes(3).toString("hex")}`;
  await expectOk(client.connections.create({ body: { slug } }));
  return { ws, client, auth: { authorization: `Bearer ${key}` }, slug };
}

function validBody(slug: string): Record<string, unknown> & { recurrence: Record<string, unknown>; message: Record<string, unknown> } {
  return {
    name: "Stand-up",
    timezone: "Europe/Berlin",
    recurrence: { type: "daily", hour: 9, minute: 0 },
    message: { connection: slug, to: "+15550001111", body: "Stand-up in 5 minutes" },
  };
}

type Problem = { code?: string; detail?: string; errors?: { path: string; message: string }[] };

describe("schedules API", () => {
  let a: Actor;
  const create = (body: unknown, auth = a.auth) => http("POST", "/v1/schedules", { body, headers: auth });
  before(async () => {
    a = await actor();
  });

  describe("create: field rules", () => {
    /** [label, change to the valid body, expected status, for a 400 the error path expected]. */
    type Case = [string, (b: ReturnType<typeof validBody>) => void, number, string?];
    const rec = (patch: Record<string, unknown>) => (b: ReturnType<typeof validBody>) => void (b.recurrence = patch);
    const weekly = (days: unknown) => rec({ type: "weekly", hour: 9, minute: 0, days_of_week: days });
    const monthly = (day: unknown) => rec({ type: "monthly", hour: 9, minute: 0, day_of_month: day });
    const cases: Case[] = [
      ["name 1", (b) => void (b.name = "n"), 201],
      ["name 80", (b) => void (b.name = "n".repeat(80)), 201],
      ["name 81", (b) => void (b.name = "n".repeat(81)), 400, "body.name"],
      ["name empty", (b) => void (b.name = ""), 400, "body.name"],
      ["name missing", (b) => void delete b.name, 400, "body.name"],
      ["timezone UTC", (b) => void (b.timezone = "UTC"), 201],
      ["timezone Asia/Kathmandu", (b) => void (b.timezone = "Asia/Kathmandu"), 201],
      ["timezone link US/Eastern", (b) => void (b.timezone = "US/Eastern"), 201],
      ["timezone 64, unknown", (b) => void (b.timezone = `Europe/${"x".repeat(57)}`), 400, "body.timezone"],
      ["timezone 65", (b) => void (b.timezone = `Europe/${"x".repeat(58)}`), 400, "body.timezone"],
      ["timezone empty", (b) => void (b.timezone = ""), 400, "body.timezone"],
      ["timezone unknown", (b) => void (b.timezone = "Mars/Phobos"), 400, "body.timezone"],
      ["timezone offset", (b) => void (b.timezone = "+02:00"), 400, "body.timezone"],
      ["max_occurrences 0", (b) => void (b.max_occurrences = 0), 400, "body.max_occurrences"],
      ["max_occurrences 1", (b) => void (b.max_occurrences = 1), 201],
      ["max_occurrences 10000", (b) => void (b.max_occurrences = 10000), 201],
      ["max_occurrences 10001", (b) => void (b.max_occurrences = 10001), 400, "body.max_occurrences"],
      ["max_occurrences 1.5", (b) => void (b.max_occurrences = 1.5), 400, "body.max_occurrences"],
      ["max_occurrences string", (b) => void (b.max_occurrences = "5"), 400, "body.max_occurrences"],
      ["days_of_week []", weekly([]), 400, "body.recurrence.days_of_week"],
      ["days_of_week 1 item", weekly([1]), 201],
      ["days_of_week 7 items", weekly([0, 1, 2, 3, 4, 5, 6]), 201],
      ["days_of_week 8 items", weekly([0, 1, 2, 3, 4, 5, 6, 0]), 400, "body.recurrence.days_of_week"],
      ["days_of_week duplicates", weekly([1, 3, 1]), 400, "body.recurrence.days_of_week"],
      ["days_of_week 7", weekly([7]), 400, "body.recurrence.days_of_week.0"],
      ["days_of_week -1", weekly([-1]), 400, "body.recurrence.days_of_week.0"],
      ["days_of_week 0 and 6", weekly([6, 0]), 201],
      ["weekly without days_of_week", rec({ type: "weekly", hour: 9, minute: 0 }), 400, "body.recurrence.days_of_week"],
      ["hour 0", rec({ type: "daily", hour: 0, minute: 0 }), 201],
      ["hour 23", rec({ type: "daily", hour: 23, minute: 0 }), 201],
      ["hour 24", rec({ type: "daily", hour: 24, minute: 0 }), 400, "body.recurrence.hour"],
      ["hour -1", rec({ type: "daily", hour: -1, minute: 0 }), 400, "body.recurrence.hour"],
      ["minute 59", rec({ type: "daily", hour: 9, minute: 59 }), 201],
      ["minute 60", rec({ type: "daily", hour: 9, minute: 60 }), 400, "body.recurrence.minute"],
      ["minute 1.5", rec({ type: "daily", hour: 9, minute: 1.5 }), 400, "body.recurrence.minute"],
      ["hour missing", rec({ type: "daily", minute: 0 }), 400, "body.recurrence.hour"],
      ["day_of_month 0", monthly(0), 400, "body.recurrence.day_of_month"],
      ["day_of_month 1", monthly(1), 201],
      ["day_of_month 31", monthly(31), 201],
      ["day_of_month 32", monthly(32), 400, "body.recurrence.day_of_month"],
      ["day_of_month -1", monthly(-1), 201],
      ["day_of_month -2", monthly(-2), 400, "body.recurrence.day_of_month"],
      ["monthly without day_of_month", rec({ type: "monthly", hour: 9, minute: 0 }), 400, "body.recurrence.day_of_month"],
      ["unknown recurrence type", rec({ type: "hourly", hour: 9, minute: 0 }), 400, "body.recurrence.type"],
      ["recurrence missing", (b) => void delete (b as Record<string, unknown>).recurrence, 400, "body.recurrence"],
      ["starts_at with Z", (b) => void (b.starts_at = "2031-01-01T00:00:00Z"), 201],
      ["starts_at with offset and fraction", (b) => void (b.starts_at = "2031-01-01T00:00:00.250+05:45"), 201],
      ["starts_at without zone", (b) => void (b.starts_at = "2031-01-01T00:00:00"), 400, "body.starts_at"],
      ["starts_at date only", (b) => void (b.starts_at = "2031-01-01"), 400, "body.starts_at"],
      ["starts_at not a real date", (b) => void (b.starts_at = "2031-02-29T00:00:00Z"), 400, "body.starts_at"],
      ["ends_at with zone", (b) => void (b.ends_at = "2031-01-01T00:00:00-03:00"), 201],
      ["ends_at without zone", (b) => void (b.ends_at = "2031-01-01T00:00:00"), 400, "body.ends_at"],
      ["extra property at the top", (b) => void (b.workspace = "wsp_other"), 400, "body"],
      ["extra property in recurrence", rec({ type: "daily", hour: 9, minute: 0, second: 0 }), 400, "body.recurrence"],
      ["days_of_week on a daily rule", rec({ type: "daily", hour: 9, minute: 0, days_of_week: [1] }), 400, "body.recurrence"],
      ["extra property in message", (b) => void (b.message.priority = "high"), 400, "body.message"],
      ["extra property in message.to", (b) => void (b.message.to = { phone: "+15550001111", name: "x" }), 400, "body.message.to"],
      ["extra property in message.media", (b) => void (b.message.media = { url: "https://example.com/a.png", size: 1 }), 400, "body.message.media"],
      ["extra property in message.location", (b) => void (b.message.location = { latitude: 1, longitude: 2, zoom: 3 }), 400, "body.message.location"],
      ["message with send_at", (b) => void (b.message.send_at = "2031-01-01T00:00:00Z"), 400, "body.message.send_at"],
      ["message with unknown connection", (b) => void (b.message.connection = "no-such-connection"), 400, "body.message.connection"],
      ["message without to", (b) => void delete b.message.to, 400, "body.message.to"],
      ["message to 4 characters", (b) => void (b.message.to = "1234"), 400, "body.message.to"],
      ["message without content", (b) => void delete b.message.body, 400, "body.message.body"],
      ["message body 4097", (b) => void (b.message.body = "x".repeat(4097)), 400, "body.message.body"],
      ["message media not http", (b) => void (b.message.media = { url: "ftp://example.com/a.png" }), 400, "body.message.media.url"],
      ["message timezone unknown", (b) => void (b.message.timezone = "Mars/Phobos"), 400, "body.message.timezone"],
      ["message a string", (b) => void ((b as Record<string, unknown>).message = "hello"), 400, "body.message"],
      ["message with media only", (b) => void ((b.message.media = { url: "https://example.com/a.png", kind: "image" }), delete b.message.body), 201],
      ["message with group recipient", (b) => void (b.message.to = { group: "120363000000@g.us" }), 201],
    ];
    for (const [label, change, status, path] of cases) {
      it(`${label} → ${status}`, async () => {
        const body = validBody(a.slug);
        change(body);
        const res = await create(body);
        expect(res.status, res.text).to.equal(status);
        if (status === 400) {
          const problem = res.json as Problem;
          expect(problem.code).to.equal("validation_failed");
          const paths = (problem.errors ?? []).map((e) => e.path);
          expect(paths.some((p) => p === path || p.startsWith(`${path}.`)), `${JSON.stringify(paths)} should name ${path}`).to.equal(true);
        }
      });
    }

    it("tells an unknown timezone from one that is too long", async () => {
      const unknown = await create({ ...validBody(a.slug), timezone: `Europe/${"x".repeat(57)}` });
      const long = await create({ ...validBody(a.slug), timezone: `Europe/${"x".repeat(58)}` });
      expect((unknown.json as Problem).errors![0]!.message).to.match(/IANA time zone/);
      expect((long.json as Problem).errors![0]!.message).to.match(/64/);
    });

    it("refuses a recurrence that never fires with 400", async () => {
      const body = validBody(a.slug);
      const never: [Record<string, unknown>, string][] = [
        [{ starts_at: "2031-06-01T00:00:00Z", ends_at: "2031-06-01T00:00:00Z" }, "body.ends_at"],
        [{ starts_at: "2031-06-02T00:00:00Z", ends_at: "2031-06-01T00:00:00Z" }, "body.ends_at"],
        [{ ends_at: "2020-01-01T00:00:00Z" }, "body.ends_at"],
        // June has no 31st.
        [{ recurrence: { type: "monthly", hour: 9, minute: 0, day_of_month: 31 }, starts_at: "2031-06-01T00:00:00Z", ends_at: "2031-06-30T23:59:59Z" }, "body.recurrence"],
        // 09:00 in Berlin is 07:00Z in June: the window closes before it.
        [{ starts_at: "2031-06-10T06:00:00Z", ends_at: "2031-06-10T06:59:59Z" }, "body.recurrence"],
      ];
      for (const [patch, path] of never) {
        const res = await create({ ...body, ...patch });
        expect(res.status, JSON.stringify(patch)).to.equal(400);
        expect((res.json as Problem).errors!.map((e) => e.path)).to.include(path);
        expect(res.text).to.match(/never fire/);
      }
      // An occurrence exactly at ends_at fires (inclusive).
      const edge = await create({ ...body, starts_at: "2031-06-10T06:00:00Z", ends_at: "2031-06-10T07:00:00Z" });
      expect(edge.status).to.equal(201);
      expect(edge.json.next_run_at).to.equal("2031-06-10T07:00:00.000Z");
    });

    it("creates a schedule whose connection is not connected yet: readiness is checked at each fire", async () => {
      const res = await create(validBody(a.slug));
      expect(res.status).to.equal(201);
      const [row] = (await db().query(`SELECT state FROM connections WHERE workspace_id = $1 AND slug = $2`, [a.ws.id, a.slug])) as { state: string }[];
      expect(row!.state).to.equal("created");
    });

    it("answers with the resolved next_run_at as an RFC 3339 UTC instant and the schedule as stored", async () => {
      const body = { ...validBody(a.slug), starts_at: "2031-03-30T00:00:00+02:00", max_occurrences: 3 };
      body.recurrence = { type: "weekly", hour: 9, minute: 0, days_of_week: [1] };
      const created = await expectOk(a.client.schedules.create({ body: body as never }));
      expect(created.id).to.match(/^sch_/);
      // Monday 31 March 2031, 09:00 CEST.
      expect(created).to.deep.include({
        object: "schedule",
        status: "active",
        name: "Stand-up",
        timezone: "Europe/Berlin",
        next_run_at: "2031-03-31T07:00:00.000Z",
        starts_at: "2031-03-29T22:00:00.000Z",
        ends_at: null,
        max_occurrences: 3,
        occurrences: 0,
        last_run_at: null,
      });
      expect(created.recurrence).to.deep.equal(body.recurrence);
      expect(created.message).to.deep.equal(body.message);
      expect(await expectOk(a.client.schedules.get({ params: { id: created.id } }))).to.deep.equal(created);
    });
  });

  describe("plan and scopes", () => {
    it("answers 402 on a plan without scheduling, naming the feature and the plan that has it", async () => {
      const free = await actor("free");
      const res = await http("POST", "/v1/schedules", { body: validBody(free.slug), headers: free.auth });
      expect(res.status).to.equal(402);
      expect(res.json).to.include({ code: "plan_required", feature: "scheduling", required_plan: "pro" });
      const [row] = (await db().query(`SELECT count(*)::int AS n FROM schedules WHERE workspace_id = $1`, [free.ws.id])) as { n: number }[];
      expect(row!.n).to.equal(0);
    });

    it("needs schedules:write to create and change, schedules:read to read", async () => {
      const readOnly = await a.ws.key(["schedules:read"]);
      const writeOnly = await a.ws.key(["schedules:write"]);
      const created = await expectOk(a.client.schedules.create({ body: validBody(a.slug) as never }));
      expect((await readOnly.client.schedules.create({ body: validBody(a.slug) as never })).status).to.equal(403);
      expect((await readOnly.client.schedules.pause({ params: { id: created.id } })).status).to.equal(403);
      expect((await readOnly.client.schedules.get({ params: { id: created.id } })).status).to.equal(200);
      expect((await writeOnly.client.schedules.list({ query: {} })).status).to.equal(403);
      expect((await http("GET", "/v1/schedules")).status).to.equal(401);
    });
  });

  describe("reads", () => {
    it("lists every schedule of the workspace, newest first, filtered by status", async () => {
      const b = await actor();
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await expectOk(b.client.schedules.create({ body: { ...validBody(b.slug), name: `s${i}` } as never }))).id);
      await expectOk(b.client.schedules.pause({ params: { id: ids[1]! } }));
      await expectOk(b.client.schedules.cancel({ params: { id: ids[2]! } }));
      const all = await expectOk(b.client.schedules.list({ query: {} }));
      expect(all.data.map((s) => s.id)).to.deep.equal([...ids].reverse());
      const byStatus = async (status: Schedule["status"]) => (await expectOk(b.client.schedules.list({ query: { status } }))).data.map((s) => s.id);
      expect(await byStatus("active")).to.deep.equal([ids[3], ids[0]]);
      expect(await byStatus("paused")).to.deep.equal([ids[1]]);
      expect(await byStatus("canceled")).to.deep.equal([ids[2]]);
      expect(await byStatus("completed")).to.deep.equal([]);
      expect((await http("GET", "/v1/schedules?status=done", { headers: b.auth })).status).to.equal(400);
      expect((await http("GET", "/v1/schedules?limit=5", { headers: b.auth })).status).to.equal(400);
    });

    it("answers 404 for another workspace's schedule on every route, and never lists it", async () => {
      const mine = await expectOk(a.client.schedules.create({ body: validBody(a.slug) as never }));
      const other = await actor();
      expect((await other.client.schedules.get({ params: { id: mine.id } })).status).to.equal(404);
      for (const verb of ["pause", "resume", "cancel"] as const) {
        const res = await other.client.schedules[verb]({ params: { id: mine.id } });
        expect(res.status, verb).to.equal(404);
      }
      expect((await expectOk(other.client.schedules.list({ query: {} }))).data).to.deep.equal([]);
      expect((await expectOk(a.client.schedules.get({ params: { id: mine.id } }))).status).to.equal("active");
      expect((await a.client.schedules.get({ params: { id: "sch_doesnotexist" } })).status).to.equal(404);
    });
  });

  describe("lifecycle", () => {
    async function scheduleIn(status: "active" | "paused" | "canceled" | "completed"): Promise<Schedule> {
      const body = { ...validBody(a.slug), ...(status === "completed" ? { max_occurrences: 1 } : {}) };
      const s = await expectOk(a.client.schedules.create({ body: body as never }));
      if (status === "paused") return expectOk(a.client.schedules.pause({ params: { id: s.id } }));
      if (status === "canceled") return expectOk(a.client.schedules.cancel({ params: { id: s.id } }));
      if (status === "completed") {
        // Its one occurrence falls due now; the connection is not connected, so it records a failed message.
        await db().query(`UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = $1`, [s.id]);
        await testEnv().gateway.ctx.services.scheduleFiring.fireDue();
        return waitFor(() => expectOk(a.client.schedules.get({ params: { id: s.id } })), (x) => x.status === "completed");
      }
      return s;
    }

    const refused: [string, "pause" | "resume" | "cancel"][] = [
      ["active", "resume"],
      ["paused", "pause"],
      ["canceled", "pause"],
      ["canceled", "resume"],
      ["canceled", "cancel"],
      ["completed", "pause"],
      ["completed", "resume"],
      ["completed", "cancel"],
    ];
    for (const [from, verb] of refused) {
      it(`refuses ${verb} of a ${from} schedule with 409 invalid_state and changes nothing`, async () => {
        const s = await scheduleIn(from as "active");
        const res = await a.client.schedules[verb]({ params: { id: s.id } });
        expect(res.status).to.equal(409);
        expect((res.body as Problem).code).to.equal("invalid_state");
        expect((res.body as Problem).detail).to.match(new RegExp(`^${from === "active" ? "An" : "A"} ${from} schedule cannot be `));
        expect(await expectOk(a.client.schedules.get({ params: { id: s.id } }))).to.deep.equal(s);
      });
    }

    it("pauses an active schedule, resumes it with the next run computed from now, and cancels for good", async () => {
      const s = await scheduleIn("active");
      const paused = await expectOk(a.client.schedules.pause({ params: { id: s.id } }));
      expect(paused.status).to.equal("paused");
      expect(paused.next_run_at).to.equal(s.next_run_at);
      const resumed = await expectOk(a.client.schedules.resume({ params: { id: s.id } }));
      expect(resumed.status).to.equal("active");
      expect(resumed.next_run_at).to.equal(nextDaily("Europe/Berlin", 9, 0));
      const canceled = await expectOk(a.client.schedules.cancel({ params: { id: s.id } }));
      expect(canceled).to.include({ status: "canceled", next_run_at: null });
      // A paused schedule can be canceled too.
      const other = await scheduleIn("paused");
      expect(await expectOk(a.client.schedules.cancel({ params: { id: other.id } }))).to.include({ status: "canceled", next_run_at: null });
    });

    it("does not fire the periods missed while paused", async () => {
      const s = await scheduleIn("paused");
      // The occurrence that was next when it was paused has passed meanwhile.
      await db().query(`UPDATE schedules SET next_run_at = now() - interval '2 days' WHERE id = $1`, [s.id]);
      await testEnv().gateway.ctx.services.scheduleFiring.fireDue();
      const resumed = await expectOk(a.client.schedules.resume({ params: { id: s.id } }));
      expect(resumed.next_run_at).to.equal(nextDaily("Europe/Berlin", 9, 0));
      expect(resumed.occurrences).to.equal(0);
      const [row] = (await db().query(`SELECT count(*)::int AS n FROM messages WHERE schedule_id = $1`, [s.id])) as { n: number }[];
      expect(row!.n).to.equal(0);
    });

    it("completes a resumed schedule whose next run would be after ends_at, with schedule.completed", async () => {
      const far = DateTime.utc().plus({ hours: 12 });
      const body = { ...validBody(a.slug), timezone: "UTC", recurrence: { type: "daily", hour: far.hour, minute: far.minute }, ends_at: DateTime.utc().plus({ days: 3 }).toISO() };
      const s = await expectOk(a.client.schedules.create({ body: body as never }));
      await expectOk(a.client.schedules.pause({ params: { id: s.id } }));
      await db().query(`UPDATE schedules SET ends_at = now() + interval '1 minute' WHERE id = $1`, [s.id]);
      const resumed = await expectOk(a.client.schedules.resume({ params: { id: s.id } }));
      expect(resumed).to.include({ status: "completed", next_run_at: null });
      const events = (await db().query(`SELECT type FROM events WHERE payload->'data'->'schedule'->>'id' = $1`, [s.id])) as { type: string }[];
      expect(events.map((e) => e.type)).to.deep.equal(["schedule.completed"]);
    });

    it("settles concurrent pause and cancel of one schedule consistently", async () => {
      const s = await scheduleIn("active");
      const results = await Promise.all([
        a.client.schedules.pause({ params: { id: s.id } }),
        a.client.schedules.cancel({ params: { id: s.id } }),
        a.client.schedules.pause({ params: { id: s.id } }),
      ]);
      const final = await expectOk(a.client.schedules.get({ params: { id: s.id } }));
      expect(results.filter((r) => r.status === 200).length).to.be.at.least(1);
      for (const r of results) expect([200, 409]).to.include(r.status);
      expect(final.status).to.equal("canceled");
    });
  });
});

/** Independent oracle: the next hour:minute wall time in `zone` after now (luxon, not the recurrence module). */
function nextDaily(zone: string, hour: number, minute: number): string {
  const now = DateTime.now().setZone(zone);
  let candidate = now.set({ hour, minute, second: 0, millisecond: 0 });
  if (candidate <= now) candidate = candidate.plus({ days: 1 }).set({ hour, minute });
  return candidate.toUTC().toISO()!;
}
