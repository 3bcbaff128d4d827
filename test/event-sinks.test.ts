// Publishing the event outbox to the machine's real brokers (NATS JetStream, RabbitMQ) from the
// test run's PostgreSQL: subjects and routing keys, payloads and ids; each connection's order,
// an event whose transaction commits late included; a broker cut mid-load through a TCP proxy
// (nothing lost, a retried batch carries the same ids, JetStream stores it once); one broker
// down while the other goes on; two processes' sinks on one outbox. Each test has stream,
// subject and exchange names of its own.
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { rows } from "../server/db/rows.js";
import { recordEvent } from "../server/events/record.js";
import { createEventSinks, type EventSinks } from "../server/events/sinks/index.js";
import { createLogger } from "../server/logger.js";
import { Metrics } from "../server/ops/metrics.js";
import type { WebhookEvent } from "../contract/index.js";
import { testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { CHILD_READY_MS, startChildGateway } from "./support/child-gateway.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { expectOk } from "../sdk/src/index.js";
import { AMQP_URL, NATS_URL, amqpQueue, brokerNames, deleteStream, readStream, streamInfo, type Received } from "./support/brokers.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;

interface Started {
  sinks: EventSinks;
  metrics: Metrics;
}

const running: EventSinks[] = [];
const cleanups: (() => Promise<void>)[] = [];

/** Sinks as a gateway process starts them, on this test's names; resolves once they have their place in the log. */
async function startSinks(names: ReturnType<typeof brokerNames>, urls: { nats?: string; amqp?: string }, idleMs = 20): Promise<Started> {
  const metrics = new Metrics();
  const sinks = createEventSinks({
    config: { events: { natsUrl: urls.nats, natsStream: names.natsStream, amqpUrl: urls.amqp, amqpExchange: names.amqpExchange, subjectPrefix: names.subjectPrefix, retentionDays: 30 } },
    db: db(),
    logger: createLogger("silent"),
    metrics,
    tuning: { batch: 200, idleMs, leaseSeconds: 5, publishTimeoutMs: 2_000 },
  });
  running.push(sinks);
  sinks.start();
  const names_ = sinks.sinks.map((s) => s.name);
  await waitFor(() => rows<{ n: number }>(db(), `SELECT count(*)::int AS n FROM event_sinks WHERE name = ANY($1)`, [names_]), ([r]) => r!.n === names_.length);
  return { sinks, metrics };
}

/** A workspace id of the test's own (the events table keeps no reference to workspaces). */
function workspace(): string {
  return `ws_test${randomBytes(6).toString("hex")}`;
}

const connections = [
  { id: "conn_a", slug: "sales-a" },
  { id: "conn_b", slug: "sales-b" },
  { id: "conn_c", slug: "support" },
];

/** Records `n` events over the three connections, `parallel` transactions at a time; answers their ids. */
async function recordMany(workspaceId: string, n: number, parallel = 8): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += parallel) {
    const group = Array.from({ length: Math.min(parallel, n - i) }, (_, k) => i + k);
    ids.push(
      ...(await Promise.all(
        group.map((j) => db().transaction((em) => recordEvent(em, { workspaceId, type: "message.sent", connection: connections[j % 3]!, data: { n: j } }))),
      )),
    );
  }
  return ids;
}

/** The workspace's events in the log's order (tx, id), each with its connection's slug. */
async function logOrder(workspaceId: string): Promise<{ id: string; slug: string | null }[]> {
  return rows(db(), `SELECT id, payload->>'connection' AS slug FROM events WHERE workspace_id = $1 ORDER BY tx, id`, [workspaceId]);
}

/** Per connection slug, the ids in the order received (first arrival of each id). */
function perConnection(items: { id: string; slug: string | null }[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const seen = new Set<string>();
  for (const e of items) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    (out[e.slug ?? "_"] ??= []).push(e.id);
  }
  return out;
}

const slugOf = (m: Received) => m.subject.split(".").at(-3) ?? null;
const ofWorkspace = <T extends Received>(workspaceId: string, list: T[]): T[] => list.filter((m) => m.subject.includes(`.${workspaceId}.`));

async function metricValue(metrics: Metrics, name: string, sink: string): Promise<number> {
  const text = await metrics.registry.metrics();
  const m = new RegExp(`^${name}\\{sink="${sink}"\\} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : NaN;
}

/** This test's names, a queue on its exchange, and a TCP proxy in front of each broker that the test cuts and restores. */
async function behindProxies() {
  const names = brokerNames();
  cleanups.push(() => deleteStream(names.natsStream));
  const queue = await amqpQueue(names.amqpExchange);
  cleanups.push(() => queue.close());
  const natsProxy = await TcpProxy.inFrontOf(NATS_URL.replace(/^nats:/, "http:"));
  const amqpProxy = await TcpProxy.inFrontOf(AMQP_URL.replace(/^amqp:/, "http:"));
  cleanups.push(async () => {
    await natsProxy.cut();
    await amqpProxy.cut();
  });
  return { names, queue, natsProxy, amqpProxy };
}

describe("event sinks (NATS JetStream, RabbitMQ)", function () {
  this.timeout(90_000);

  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
    for (const c of cleanups.splice(0)) await c();
  });

  it("publishes every event with its subject, payload and id, creating the stream when missing", async () => {
    const names = brokerNames();
    cleanups.push(() => deleteStream(names.natsStream));
    expect(await streamInfo(names.natsStream)).to.equal(null);
    const queue = await amqpQueue(names.amqpExchange);
    cleanups.push(() => queue.close());
    await startSinks(names, { nats: NATS_URL, amqp: AMQP_URL });
    const ws = workspace();
    const types: WebhookEvent[] = ["message.received", "message.delivered", "connection.disconnected"];
    const ids: string[] = [];
    for (const [i, type] of types.entries()) ids.push(await db().transaction((em) => recordEvent(em, { workspaceId: ws, type, connection: connections[i]!, data: { i } })));
    ids.push(await db().transaction((em) => recordEvent(em, { workspaceId: ws, type: "schedule.completed", connection: null, data: { none: true } })));

    const stored = await rows<{ id: string; payload: Record<string, unknown> }>(db(), `SELECT id, payload FROM events WHERE workspace_id = $1 ORDER BY tx, id`, [ws]);
    const expected = stored.map((e) => ({
      id: e.id,
      subject: `${names.subjectPrefix}.${ws}.${(e.payload.connection as string | null) ?? "_"}.${e.payload.type as string}`,
      payload: e.payload,
    }));
    expect(expected.map((e) => e.id)).to.deep.equal(ids);
    expect(expected[0]!.subject).to.equal(`${names.subjectPrefix}.${ws}.sales-a.message.received`);
    expect(expected[3]!.subject).to.equal(`${names.subjectPrefix}.${ws}._.schedule.completed`);

    // Other tests' processes record events into the same log while this one runs: each test reads its own workspace's.
    const nats = await waitFor(async () => ofWorkspace(ws, await readStream(names.natsStream)), (list) => list.length >= 4);
    expect(nats.map(({ id, subject, payload }) => ({ id, subject, payload }))).to.deep.equal(expected);
    const info = await streamInfo(names.natsStream);
    expect(info!.config.subjects).to.deep.equal([`${names.subjectPrefix}.>`]);
    expect(info!.config.duplicate_window).to.equal(120_000_000_000);

    const amqp = await waitFor(async () => ofWorkspace(ws, queue.messages), (list) => list.length >= 4);
    expect(amqp.map(({ id, subject, payload }) => ({ id, subject, payload }))).to.deep.equal(expected);
    expect(amqp.every((m) => m.persistent && m.contentType === "application/json")).to.equal(true);
  });

  it("keeps each connection's order, and publishes an event whose transaction commits late in its place", async function () {
    // The embedded database is one backend session: a transaction held open there holds every other statement.
    if (testEnv().gateway.database.embedded) this.skip();
    const names = brokerNames();
    cleanups.push(() => deleteStream(names.natsStream));
    const queue = await amqpQueue(names.amqpExchange);
    cleanups.push(() => queue.close());
    await startSinks(names, { nats: NATS_URL, amqp: AMQP_URL });
    const ws = workspace();

    // A transaction records its event first and commits last: an order by id or by time would
    // publish the later event first, or skip this one once past it.
    const runner = db().createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    const late = await recordEvent(runner.manager, { workspaceId: ws, type: "message.queued", connection: connections[0]!, data: { late: true } });
    const ids = await recordMany(ws, 300);
    await runner.commitTransaction();
    await runner.release();

    const order = await logOrder(ws);
    expect(order).to.have.length(301);
    expect(order[0]!.id).to.equal(late);
    const nats = await waitFor(async () => ofWorkspace(ws, await readStream(names.natsStream)), (list) => list.length >= 301);
    const amqp = await waitFor(async () => ofWorkspace(ws, queue.messages), (list) => list.length >= 301);
    const expected = perConnection(order);
    expect(perConnection(nats.map((m) => ({ id: m.id, slug: slugOf(m) })))).to.deep.equal(expected);
    expect(perConnection(amqp.map((m) => ({ id: m.id, slug: slugOf(m) })))).to.deep.equal(expected);
    expect(expected["sales-a"]![0]).to.equal(late);
    expect(new Set(nats.map((m) => m.id))).to.deep.equal(new Set([late, ...ids]));
  });

  it("loses nothing when both brokers are cut mid-load, and publishes a batch again only under the same ids", async () => {
    const { names, queue, natsProxy, amqpProxy } = await behindProxies();
    const { metrics } = await startSinks(names, { nats: `nats://127.0.0.1:${natsProxy.port}`, amqp: `amqp://guest:guest@127.0.0.1:${amqpProxy.port}` });
    const ws = workspace();

    const first = await recordMany(ws, 200);
    await waitFor(async () => ofWorkspace(ws, await readStream(names.natsStream)), (list) => list.length >= 50);
    // Mid-load: the brokers go away while events keep being recorded.
    await natsProxy.cut();
    await amqpProxy.cut();
    const during = await recordMany(ws, 300);
    await waitFor(() => metricValue(metrics, "svc_event_sink_failures_total", "nats"), (n) => n > 0);
    await waitFor(() => metricValue(metrics, "svc_event_sink_failures_total", "amqp"), (n) => n > 0);
    expect(await metricValue(metrics, "svc_event_sink_lag_events", "amqp")).to.be.greaterThan(0);
    expect(await metricValue(metrics, "svc_event_sink_lag_seconds", "nats")).to.be.greaterThan(0);
    await natsProxy.restore();
    await amqpProxy.restore();
    const after = await recordMany(ws, 100);
    const all = [...first, ...during, ...after];

    const nats = await waitFor(async () => ofWorkspace(ws, await readStream(names.natsStream)), (list) => new Set(list.map((m) => m.id)).size >= all.length, 60_000, 250);
    const amqp = await waitFor(async () => ofWorkspace(ws, queue.messages), (list) => new Set(list.map((m) => m.id)).size >= all.length, 60_000, 250);
    // Nothing lost; a batch published again comes under the same ids (JetStream's duplicate window
    // absorbs nearly all of them: under a loaded full run one was once seen stored twice).
    expect(new Set(nats.map((m) => m.id))).to.deep.equal(new Set(all));
    // RabbitMQ has no such window: a duplicate is the same event under the same id.
    expect(new Set(amqp.map((m) => m.id))).to.deep.equal(new Set(all));
    for (const m of [...nats, ...amqp]) expect(m.payload.id).to.equal(m.id);
    const expected = perConnection(await logOrder(ws));
    expect(perConnection(nats.map((m) => ({ id: m.id, slug: slugOf(m) })))).to.deep.equal(expected);
    expect(perConnection(amqp.map((m) => ({ id: m.id, slug: slugOf(m) })))).to.deep.equal(expected);
    await waitFor(() => metricValue(metrics, "svc_event_sink_lag_events", "nats"), (n) => n === 0);
    expect(await metricValue(metrics, "svc_event_sink_published_total", "nats")).to.be.at.least(all.length);
  });

  it("a broker that is down holds up only its own sink; it catches up by itself when back", async () => {
    const names = brokerNames();
    cleanups.push(() => deleteStream(names.natsStream));
    const queue = await amqpQueue(names.amqpExchange);
    cleanups.push(() => queue.close());
    const amqpProxy = await TcpProxy.inFrontOf(AMQP_URL.replace(/^amqp:/, "http:"));
    cleanups.push(() => amqpProxy.cut());
    await amqpProxy.cut();
    const { metrics } = await startSinks(names, { nats: NATS_URL, amqp: `amqp://guest:guest@127.0.0.1:${amqpProxy.port}` });
    const ws = workspace();
    const ids = await recordMany(ws, 40);
    const nats = await waitFor(async () => ofWorkspace(ws, await readStream(names.natsStream)), (list) => list.length >= 40);
    expect(nats.map((m) => m.id).sort()).to.deep.equal([...ids].sort());
    await waitFor(() => metricValue(metrics, "svc_event_sink_failures_total", "amqp"), (n) => n > 0);
    expect(await metricValue(metrics, "svc_event_sink_lag_events", "amqp")).to.be.at.least(40);
    expect(queue.messages).to.have.length(0);
    await amqpProxy.restore();
    const amqp = await waitFor(async () => ofWorkspace(ws, queue.messages), (list) => list.length >= 40, 30_000);
    expect(amqp.map((m) => m.id).sort()).to.deep.equal([...ids].sort());
  });

  it("publishes at once when woken (an event's notification) rather than after its idle wait", async () => {
    const names = brokerNames();
    cleanups.push(() => deleteStream(names.natsStream));
    // Idle for a minute between looks: only a wake-up can publish within the wait below.
    const { sinks, metrics } = await startSinks(names, { nats: NATS_URL }, 60_000);
    const ws = workspace();
    const ids = await recordMany(ws, 3);
    // Woken at every look, as each recording statement's notification does (an event is published
    // once no transaction that began before it is still open: other tests' may be).
    const nats = await waitFor(
      async () => {
        sinks.wake();
        return ofWorkspace(ws, await readStream(names.natsStream));
      },
      (list) => list.length >= 3,
      15_000,
    );
    expect(nats.map((m) => m.id).sort()).to.deep.equal([...ids].sort());
    expect(await metricValue(metrics, "svc_event_sink_published_total", "nats")).to.be.at.least(3);
  });

  it("two processes' sinks on one outbox publish each event once, in order", async () => {
    const names = brokerNames();
    cleanups.push(() => deleteStream(names.natsStream));
    const one = await startSinks(names, { nats: NATS_URL });
    const two = await startSinks(names, { nats: NATS_URL });
    const ws = workspace();
    const ids = await recordMany(ws, 500);
    const nats = await waitFor(async () => ofWorkspace(ws, await readStream(names.natsStream)), (list) => list.length >= 500);
    expect(nats.map((m) => m.id)).to.deep.equal((await logOrder(ws)).map((e) => e.id));
    expect(new Set(nats.map((m) => m.id))).to.deep.equal(new Set(ids));
    // One holds the lease: no batch went out twice, not even to be dropped as a duplicate. Other
    // tests' events reach the stream too, so the two counters are read once both sinks stopped
    // and set against everything the stream holds.
    await one.sinks.stop();
    await two.sinks.stop();
    const published = (await metricValue(one.metrics, "svc_event_sink_published_total", "nats")) + (await metricValue(two.metrics, "svc_event_sink_published_total", "nats"));
    expect(published).to.equal((await readStream(names.natsStream)).length);
  });

  it("a gateway process started with EVENTS_NATS_URL and EVENTS_AMQP_URL publishes a sandbox conversation's events, in order, across a broker restart", async function () {
    // The sum of its bounded waits: the child's start, the conversation's sends, the events recorded, each broker's arrivals.
    this.timeout(CHILD_READY_MS + 30_000 + 30_000 + 2 * 60_000);
    const { names, queue, natsProxy, amqpProxy } = await behindProxies();
    // The process that publishes: configured as an operator configures one. This one sends nothing.
    const child = await startChildGateway({
      EVENTS_NATS_URL: `nats://127.0.0.1:${natsProxy.port}`,
      EVENTS_NATS_STREAM: names.natsStream,
      EVENTS_AMQP_URL: `amqp://guest:guest@127.0.0.1:${amqpProxy.port}`,
      EVENTS_AMQP_EXCHANGE: names.amqpExchange,
      EVENTS_SUBJECT_PREFIX: names.subjectPrefix,
      DISPATCHER: "off",
    });
    cleanups.push(async () => void (await child.terminate()));
    const ws = await newWorkspace();
    const { client } = await ws.key(["messages:write", "connections:write", "connections:read"]);
    const phone = uniquePhone();
    await pairConnection(client, "desk", phone);
    const contacts = Array.from({ length: 6 }, () => uniquePhone());
    for (const [i, to] of contacts.entries()) {
      if (i === 3) {
        // The brokers go away mid-conversation and come back.
        await natsProxy.cut();
        await amqpProxy.cut();
      }
      await expectOk(client.messages.send({ body: { connection: "desk", to, body: `hello ${i}` } }));
      const reply = await sandbox("POST", "/inbound", { to: phone, from: to, body: `reply ${i}` });
      expect(reply.status, JSON.stringify(reply.json)).to.be.oneOf([200, 202]);
      if (i === 4) {
        await natsProxy.restore();
        await amqpProxy.restore();
      }
    }
    // What the sends and replies recorded so far (hand-offs and receipts go on recording more,
    // which the brokers get too): each of these must be in both, in the log's order.
    const recordedSoFar = async () => ({
      log: await logOrder(ws.id),
      types: (await rows<{ type: string }>(db(), `SELECT type FROM events WHERE workspace_id = $1`, [ws.id])).map((t) => t.type),
    });
    const { log } = await waitFor(recordedSoFar, (e) => e.types.filter((t) => t === "message.queued").length === 6 && e.types.filter((t) => t === "message.received").length === 6, 30_000, 200);
    const ids = new Set(log.map((e) => e.id));
    const nats = await waitFor(() => readStream(names.natsStream), (list) => list.filter((m) => ids.has(m.id)).length >= ids.size, 60_000, 250);
    const amqp = await waitFor(async () => queue.messages, (list) => new Set(list.filter((m) => ids.has(m.id)).map((m) => m.id)).size >= ids.size, 60_000, 250);
    const expected = perConnection(log);
    expect(perConnection(nats.filter((m) => ids.has(m.id)).map((m) => ({ id: m.id, slug: slugOf(m) })))).to.deep.equal(expected);
    expect(perConnection(amqp.filter((m) => ids.has(m.id)).map((m) => ({ id: m.id, slug: slugOf(m) })))).to.deep.equal(expected);
    expect(nats.filter((m) => ids.has(m.id))).to.have.length(ids.size);
    expect(new Set(nats.filter((m) => ids.has(m.id)).map((m) => m.payload.type))).to.include.members(["message.queued", "message.received"]);
  });
});
