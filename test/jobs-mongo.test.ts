// Agenda on MongoDB (JOBS_MONGODB_URL), run against a MongoDB-wire-compatible emulator (jongodb:
// test/support/mongo-emulator.ts), not against MongoDB itself, which cannot be installed here. A
// gateway process with a database of its own runs every job through the emulator: a deferred send
// and a daily schedule each fire exactly once. What this does not show (replica sets, fail-over,
// several job processes on one MongoDB) is in docs/operations.md. Skipped, with a note, where no
// emulator is named (TEST_MONGO_EMULATOR); CI installs one and runs this file.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { MongoClient, type Document } from "mongodb";
import pg from "pg";
import { DateTime } from "luxon";
import { createClient, expectOk } from "../sdk/src/index.js";
import { JobRunner } from "../jobs/runner.js";
import { createLogger } from "../server/logger.js";
import { testEnv } from "./setup.js";
import { clientAddress, signIn, uniqueEmail } from "./support/actors.js";
import { startChildGateway, type ChildGateway } from "./support/child-gateway.js";
import { mongoEmulatorBinary, startMongoEmulator, type MongoEmulator } from "./support/mongo-emulator.js";
import { ownDatabase, patiently, type OwnDatabase } from "./support/own-database.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

/** Agenda's collection in the MongoDB backend (its default name). */
const JOBS_COLLECTION = "agendaJobs";

/** TCP connections from this machine to `port` that are open (state ESTABLISHED), from /proc/net/tcp. */
function openConnectionsTo(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[2]?.endsWith(`:${hexPort}`) && f[3] === "01").length;
}

describe("Agenda on a MongoDB-wire emulator (JOBS_MONGODB_URL)", function () {
  this.timeout(120_000);
  let emulator: MongoEmulator;
  let mongo: MongoClient;

  before(async function () {
    const binary = mongoEmulatorBinary();
    if (!binary) {
      // CI names the emulator; without it this file would pass having tested nothing.
      if (process.env.CI) throw new Error("TEST_MONGO_EMULATOR is not set: .ci/run installs the emulator and names it");
      console.log("      (no MongoDB-wire emulator: set TEST_MONGO_EMULATOR to the jongodb binary to run these)");
      this.skip();
    }
    emulator = await startMongoEmulator(binary);
    mongo = await MongoClient.connect(emulator.url);
  });

  after(async () => {
    await mongo?.close();
    emulator?.stop();
  });

  it("polls every 500 ms, as there is no notification channel, and closes its connections when stopped", async () => {
    const port = Number(new URL(emulator.url).port);
    const ours = openConnectionsTo(port);
    const runner = await JobRunner.create({ databaseUrl: testEnv().databaseUrl, embedded: false, mongoUrl: emulator.url, logger: createLogger("silent") });
    await runner.start();
    expect((runner.agenda.attrs as { processEvery: number }).processEvery).to.equal(500);
    expect(openConnectionsTo(port)).to.be.above(ours);
    await runner.stop();
    // Only this test's own client's connections remain.
    await waitFor(async () => openConnectionsTo(port), (n) => n === ours, 5_000);
  });

  describe("a gateway process whose jobs run on the emulator", () => {
    let target: OwnDatabase;
    let db: pg.Client;
    let child: ChildGateway;
    let api: ReturnType<typeof createClient>;
    const slug = "on-mongo";

    const jobs = () => mongo.db().collection<Document>(JOBS_COLLECTION);
    const deliveries = async (messageId: string) =>
      Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM sandbox_deliveries WHERE message_id = $1`, [messageId])).rows[0]!.n);

    before(async () => {
      // Its own database: the run's gateway, whose jobs are elsewhere, must not fire these.
      target = await ownDatabase();
      const owner = uniqueEmail("mongo-owner");
      child = await startChildGateway({ DATABASE_URL: target.url, JOBS_MONGODB_URL: emulator.url, ADMIN_EMAIL: owner, SMTP_URL: testEnv().smtpUrl });
      db = await patiently(async () => {
        const direct = new pg.Client({ connectionString: target.url });
        await direct.connect();
        return direct;
      });
      // The first workspace is made on the free plan; deferred sends and schedules need scheduling.
      await db.query(`UPDATE workspaces SET plan_id = 'pro'`);
      const session = createClient({ baseUrl: child.url, cookie: await signIn(owner, clientAddress(), child.url) });
      const scopes = ["messages:read", "messages:write", "connections:read", "connections:write", "schedules:read", "schedules:write"] as const;
      const { key } = await expectOk(session.workspace.createApiKey({ body: { name: "mongo", scopes: [...scopes], environment: "live" } }));
      api = createClient({ baseUrl: child.url, apiKey: key });
      await pairConnection(api, slug, uniquePhone("+1557"), { baseUrl: child.url });
    });

    after(async () => {
      await child?.terminate();
      await db?.end();
      await target?.close();
    });

    it("keeps no job in the database: Agenda's jobs are the emulator's", async () => {
      const [{ table }] = (await db.query<{ table: string | null }>(`SELECT to_regclass('agenda_jobs')::text AS table`)).rows as [{ table: string | null }];
      expect(table).to.equal(null);
      expect(await jobs().countDocuments({ type: "single" })).to.be.above(0);
    });

    it("fires a deferred send exactly once, at its time", async () => {
      const sendAt = new Date(Date.now() + 2_000).toISOString();
      const sent = await expectOk(api.messages.send({ body: { connection: slug, to: uniquePhone("+1557"), body: `later ${randomBytes(3).toString("hex")}`, send_at: sendAt } }));
      expect(sent.status).to.equal("scheduled");
      const read = await waitFor(() => expectOk(api.messages.get({ params: { id: sent.id } })), (m) => m.status === "read", 30_000);
      expect(Date.parse(read.timeline.find((t) => t.status === "queued")!.at)).to.be.at.least(Date.parse(sendAt) - 1000);
      expect(await deliveries(sent.id)).to.equal(1);
      // Its job ran and is done: nothing left in the emulator to run it again.
      const pending = await jobs().find({ type: "normal", nextRunAt: { $ne: null } }).toArray();
      expect(pending.map((j) => j.name)).to.deep.equal([]);
      const failed = await jobs().find({ failedAt: { $exists: true, $ne: null } }).toArray();
      expect(failed.map((j) => `${j.name}: ${j.failReason}`)).to.deep.equal([]);
    });

    it("fires a daily schedule exactly once for its occurrence, and moves it to the next day", async () => {
      const schedule = await expectOk(
        api.schedules.create({ body: { name: "daily on mongo", timezone: "UTC", recurrence: { type: "daily", hour: 10, minute: 0 }, message: { connection: slug, to: uniquePhone("+1557"), body: "daily" } } }),
      );
      // Made due in two seconds (whole milliseconds, as the gateway computes them); the firing loop fires it.
      const due = (await db.query<{ at: Date }>(`UPDATE schedules SET next_run_at = date_trunc('milliseconds', now() + interval '2 seconds') WHERE id = $1 RETURNING next_run_at AS at`, [schedule.id])).rows[0]!.at;
      const moved = await waitFor(() => expectOk(api.schedules.get({ params: { id: schedule.id } })), (s) => s.next_run_at !== due.toISOString(), 30_000);
      // The next 10:00 UTC after the fire: the occurrence fired once, and the next is a day's.
      let tenOClock = DateTime.utc().startOf("day").set({ hour: 10 });
      if (tenOClock.toMillis() <= due.getTime()) tenOClock = tenOClock.plus({ days: 1 });
      expect(Date.parse(moved.next_run_at!)).to.equal(tenOClock.toMillis());
      const runs = await waitFor(
        async () => (await db.query<{ message_id: string | null }>(`SELECT message_id FROM schedule_runs WHERE schedule_id = $1`, [schedule.id])).rows,
        (r) => r.length > 0 && r[0]!.message_id !== null,
        30_000,
      );
      expect(runs).to.have.length(1);
      const messageId = runs[0]!.message_id!;
      await waitFor(() => expectOk(api.messages.get({ params: { id: messageId } })), (m) => m.status === "read", 30_000);
      expect(await deliveries(messageId)).to.equal(1);
      const messages = await db.query(`SELECT id FROM messages WHERE schedule_id = $1`, [schedule.id]);
      expect(messages.rows).to.have.length(1);
      // Fired by the process's own firing loop: the Agenda lanes of earlier versions are gone from the emulator.
      expect(await jobs().countDocuments({ name: /^schedules\.fire-due\./ })).to.equal(0);
    });
  });
});
