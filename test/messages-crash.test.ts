// Durability across process death: other gateway processes on the same database, killed with
// SIGKILL between accept and hand-off, or stopped with SIGTERM in the middle of one.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { createClient, expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type TestWorkspace } from "./support/actors.js";
import { startChildGateway } from "./support/child-gateway.js";
import { pairConnection } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

function phone(): string {
  return `+1556${String(randomBytes(4).readUInt32BE(0) % 10_000_000).padStart(7, "0")}`;
}

async function receivedCount(baseUrl: string, to: string): Promise<number> {
  const res = await fetch(`${baseUrl}/sandbox/v1/received?to=${encodeURIComponent(to)}`);
  const json = (await res.json()) as { data?: unknown[] } | unknown[];
  return (Array.isArray(json) ? json : (json.data ?? [])).length;
}

describe("crash safety of the hand-off", function () {
  this.timeout(120_000);
  let ws: TestWorkspace;
  let key: string;
  let slug: string;

  before(async () => {
    ws = await newWorkspace();
    const k = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
    key = k.key;
    slug = `crash-${randomBytes(3).toString("hex")}`;
    await pairConnection(k.client, slug, phone());
    // This test's processes do the hand-offs; the test gateway's dispatcher stands aside.
    await testEnv().gateway.ctx.dispatcher.stop();
  });

  // Faults live in the simulated network (the database), shared by every process: reset them.
  const resetFaults = () =>
    fetch(`${testEnv().baseUrl}/sandbox/v1/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ fail_next_sends: 0, latency_ms: 0, duplicate_callbacks: false }),
    });
  afterEach(resetFaults);
  after(async () => {
    await resetFaults();
    testEnv().gateway.ctx.dispatcher.start();
  });

  it("sends every message accepted by a process killed before hand-off exactly once after restart", async () => {
    const accepting = await startChildGateway({ DISPATCHER: "off" });
    const client = createClient({ baseUrl: accepting.url, apiKey: key });
    const recipients = Array.from({ length: 20 }, phone);
    const ids: string[] = [];
    for (const to of recipients) ids.push((await expectOk(client.messages.send({ body: { connection: slug, to, body: "durable" } }))).id);
    await accepting.kill();

    const restarted = await startChildGateway({ DISPATCH_LOCK_SECONDS: "2" });
    try {
      const after = createClient({ baseUrl: restarted.url, apiKey: key });
      for (const id of ids) {
        await waitFor(() => expectOk(after.messages.get({ params: { id } })), (m) => m.status === "read", 30_000);
      }
      for (const to of recipients) expect(await receivedCount(restarted.url, to), to).to.equal(1);
    } finally {
      await restarted.terminate();
    }
  });

  it("sends a message whose hand-off was cut by SIGKILL exactly once", async () => {
    const first = await startChildGateway({ DISPATCH_LOCK_SECONDS: "2" });
    const to = phone();
    let id: string;
    try {
      // Slow engine calls: the kill lands while the hand-off is in progress.
      await fetch(`${first.url}/sandbox/v1/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ latency_ms: 1500 }) });
      const client = createClient({ baseUrl: first.url, apiKey: key });
      id = (await expectOk(client.messages.send({ body: { connection: slug, to, body: "cut" } }))).id;
      await waitFor(() => expectOk(client.messages.get({ params: { id } })), (m) => m.status === "submitting", 10_000);
    } finally {
      await first.kill();
    }
    const second = await startChildGateway({ DISPATCH_LOCK_SECONDS: "2" });
    try {
      const client = createClient({ baseUrl: second.url, apiKey: key });
      const done = await waitFor(() => expectOk(client.messages.get({ params: { id: id! } })), (m) => m.status === "read", 30_000);
      expect(done.timeline.filter((t) => t.status === "submitting").length).to.be.at.least(2);
      expect(await receivedCount(second.url, to)).to.equal(1);
    } finally {
      await second.terminate();
    }
  });

  it("gives the claims it has not started back on SIGTERM, and another process sends them without waiting for their lock", async () => {
    // One message every 4 s, claims locked for 5 minutes: the stopping process holds claims it
    // would need seconds to hand off, and another could only take them when their lock expires.
    const slow = { DISPATCH_RATE_PER_CONNECTION: "0.25", DISPATCH_LOCK_SECONDS: "300" };
    const first = await startChildGateway(slow);
    const client = createClient({ baseUrl: first.url, apiKey: key });
    const recipients = Array.from({ length: 6 }, phone);
    const ids: string[] = [];
    try {
      for (const to of recipients) ids.push((await expectOk(client.messages.send({ body: { connection: slug, to, body: "given back" } }))).id);
      // Every message claimed by the first process, at least one handed off and at least one not
      // yet (a state that lasts while the pace holds them: on a loaded machine a poll of the
      // database can take seconds, longer than one pace step).
      await waitFor(
        () =>
          testEnv().gateway.ctx.db.query(
            `SELECT count(*)::int AS queued, (count(*) FILTER (WHERE locked_until > now()))::int AS claimed FROM dispatch_queue WHERE message_id = ANY($1)`,
            [ids],
          ) as Promise<{ queued: number; claimed: number }[]>,
        ([r]) => r!.claimed === r!.queued && r!.queued >= 1 && r!.queued < ids.length,
        20_000,
      );
    } catch (err) {
      await first.kill();
      throw err;
    }
    expect(await first.terminate()).to.equal(0);
    const left = (await testEnv().gateway.ctx.db.query(`SELECT message_id, locked_until, attempts FROM dispatch_queue WHERE message_id = ANY($1)`, [ids])) as { locked_until: Date | null; attempts: number }[];
    expect(left.length, "messages the stopping process did not hand off").to.be.at.least(1);
    expect(left.every((r) => r.locked_until === null && r.attempts === 0), JSON.stringify(left)).to.equal(true);

    const second = await startChildGateway({ DISPATCH_LOCK_SECONDS: "300" });
    try {
      const after = createClient({ baseUrl: second.url, apiKey: key });
      for (const id of ids) await waitFor(() => expectOk(after.messages.get({ params: { id } })), (m) => m.status === "read", 30_000);
      for (const to of recipients) expect(await receivedCount(second.url, to), to).to.equal(1);
    } finally {
      await second.terminate();
    }
  });

  it("finishes the hand-off in flight on SIGTERM and exits 0", async () => {
    const child = await startChildGateway();
    let sent;
    try {
      await fetch(`${child.url}/sandbox/v1/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ latency_ms: 1000 }) });
      const client = createClient({ baseUrl: child.url, apiKey: key });
      sent = await expectOk(client.messages.send({ body: { connection: slug, to: phone(), body: "graceful" } }));
      await waitFor(() => expectOk(client.messages.get({ params: { id: sent!.id } })), (m) => m.status === "submitting", 10_000);
    } catch (err) {
      await child.kill();
      throw err;
    }
    expect(await child.terminate()).to.equal(0);
    const [row] = (await testEnv().gateway.ctx.db.query(`SELECT status, provider_message_id FROM messages WHERE id = $1`, [sent.id])) as {
      status: string;
      provider_message_id: string | null;
    }[];
    // What the child said while stopping, should it not have recorded the hand-off.
    expect(row!.provider_message_id, `${JSON.stringify(row)}\n${child.output().slice(-4000)}`).to.be.a("string");
    expect(row!.status).to.not.equal("submitting");
  });
});
