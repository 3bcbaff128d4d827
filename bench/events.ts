// Publishing the event outbox to the brokers (docs/events.md), from one gateway process:
//
// 1. Throughput: N events already recorded (a backlog, as after a broker outage), one sink at a
//    time publishes them from its start; events/s = N / the time until the sink's position
//    reached the last one (every event acknowledged by the broker).
// 2. Lag: events recorded at a steady rate (default 1,000 a second: every 10 ms one statement
//    inserting that tick's events, as concurrent sends share one statement) while both sinks run
//    with their production settings; a consumer
//    on each broker (a JetStream ordered consumer, a RabbitMQ queue) takes the lag of every event
//    as its arrival minus its `created_at`. Nothing missing, nothing out of order per connection.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/events.ts [--backlog 50000] [--rate 1000] [--seconds 20]
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { rows } from "../server/db/rows.js";
import { buildEvent, eventParams, insertEvents as insertEventsSql } from "../server/events/record.js";
import { createEventSinks } from "../server/events/sinks/index.js";
import { createLogger } from "../server/logger.js";
import { Metrics } from "../server/ops/metrics.js";
import { AMQP_URL, NATS_URL, amqpQueue, brokerNames, deleteStream } from "../test/support/brokers.js";
import { startBench, table } from "./harness.js";

const { values } = parseArgs({
  options: {
    backlog: { type: "string", default: "50000" },
    rate: { type: "string", default: "1000" },
    seconds: { type: "string", default: "20" },
  },
});
const backlog = Number(values.backlog);
const rate = Number(values.rate);
const seconds = Number(values.seconds);

const bench = await startBench({}, 0);
const { db } = bench.gateway.ctx;
const logger = createLogger("silent");
const connections = Array.from({ length: 8 }, (_, i) => ({ id: `conn_bench${i}`, slug: `bench-${i}` }));
const data = { message_id: "msg_01JD3Q8W2Z6K9V5N1R4T7Y0B2C", status: "delivered", to: "+15550001111", at: new Date().toISOString() };

function sinksFor(names: ReturnType<typeof brokerNames>, urls: { nats?: string; amqp?: string }) {
  return createEventSinks({
    config: { events: { natsUrl: urls.nats, natsStream: names.natsStream, amqpUrl: urls.amqp, amqpExchange: names.amqpExchange, subjectPrefix: names.subjectPrefix, retentionDays: 30 } },
    db,
    logger,
    metrics: new Metrics(),
    listener: bench.gateway.ctx.listener,
  });
}

/** One statement inserting `events` (built by buildEvent), as the send path's shared statements do. */
async function insertEvents(events: ReturnType<typeof buildEvent>[]): Promise<void> {
  const placeholders = events.map((_, k) => `($${k * 6 + 1}, $${k * 6 + 2}, $${k * 6 + 3}, $${k * 6 + 4}, $${k * 6 + 5}::jsonb, $${k * 6 + 6})`).join(", ");
  await db.query(insertEventsSql(`VALUES ${placeholders}`), events.flatMap(eventParams));
}

// ---- 1. throughput from a backlog ----
const workspaceId = `ws_bench${randomBytes(4).toString("hex")}`;
for (let i = 0; i < backlog; i += 2_000) {
  await insertEvents(Array.from({ length: Math.min(2_000, backlog - i) }, (_, k) => buildEvent({ workspaceId, type: "message.delivered", connection: connections[(i + k) % 8]!, data })));
}
await db.query(`UPDATE events SET fanned_out_at = now() WHERE fanned_out_at IS NULL`);
const [last] = await rows<{ id: string }>(db, `SELECT id FROM events ORDER BY tx DESC, id DESC LIMIT 1`);

const throughput: Record<string, string>[] = [];
for (const kind of ["nats", "amqp"] as const) {
  const names = brokerNames();
  const sinks = sinksFor(names, kind === "nats" ? { nats: NATS_URL } : { amqp: AMQP_URL });
  const queue = kind === "amqp" ? await amqpQueue(names.amqpExchange) : null;
  const name = sinks.sinks[0]!.name;
  // From the start of the log, not from its end as a new sink starts.
  await db.query(`INSERT INTO event_sinks (name, tx, event_id) VALUES ($1, -1, '')`, [name]);
  const started = performance.now();
  sinks.start();
  for (;;) {
    const [at] = await rows<{ event_id: string }>(db, `SELECT event_id FROM event_sinks WHERE name = $1`, [name]);
    if (at?.event_id === last!.id) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const elapsed = (performance.now() - started) / 1000;
  await sinks.stop();
  await queue?.close();
  if (kind === "nats") await deleteStream(names.natsStream);
  throughput.push({ broker: kind === "nats" ? "NATS JetStream" : "RabbitMQ", events: String(backlog), seconds: elapsed.toFixed(2), "events/s": Math.round(backlog / elapsed).toLocaleString("en") });
}
console.log(`\nThroughput: a backlog of ${backlog} events published from one process, one broker at a time\n`);
table(throughput);

// ---- 2. lag at a steady rate, both brokers at once ----
const names = brokerNames();
const queue = await amqpQueue(names.amqpExchange);
const sinks = sinksFor(names, { nats: NATS_URL, amqp: AMQP_URL });
sinks.start();
// Sinks start at the end of the log: wait until they have their place.
while ((await rows(db, `SELECT 1 FROM event_sinks WHERE name = ANY($1)`, [sinks.sinks.map((s) => s.name)])).length < 2) await new Promise((r) => setTimeout(r, 20));

const lagWorkspace = `ws_lag${randomBytes(4).toString("hex")}`;
const natsLag: number[] = [];
const nc = await natsConnect({ servers: NATS_URL });
const js = jetstream(nc);
// The stream exists once the sink published its first batch: the consumer starts after that.
const consuming = (async () => {
  for (;;) {
    try {
      const consumer = await js.consumers.get(names.natsStream);
      const messages = await consumer.consume();
      for await (const m of messages) {
        const created = Date.parse((m.json() as { created_at: string }).created_at);
        natsLag.push(Date.now() - created);
      }
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
})();

const recorded: string[] = [];
const tickMs = 10;
const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
const until = Date.now() + seconds * 1000;
let n = 0;
const inFlight = new Set<Promise<unknown>>();
while (Date.now() < until) {
  const tickStart = Date.now();
  const events = Array.from({ length: perTick }, () => {
    const i = n++;
    return buildEvent({ workspaceId: lagWorkspace, type: "message.sent", connection: connections[i % 8]!, data: { i } });
  });
  const p = insertEvents(events).then(() => recorded.push(...events.map((e) => e.id)));
  inFlight.add(p);
  void p.finally(() => inFlight.delete(p));
  const wait = tickMs - (Date.now() - tickStart);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}
await Promise.all(inFlight);
const recordSeconds = seconds;
const deadline = Date.now() + 30_000;
const amqpOf = () => queue.messages.filter((m) => m.subject.includes(lagWorkspace));
while ((natsLag.length < recorded.length || amqpOf().length < recorded.length) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));

const amqpIds = amqpOf().map((m) => m.id);
const amqpLag = amqpOf().map((m) => m.receivedAt - Date.parse(m.payload.created_at as string));
const pct = (list: number[], p: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};
console.log(`\nLag: ${recorded.length} events recorded over ${recordSeconds} s (${Math.round(recorded.length / recordSeconds)}/s), one statement per 10 ms; both sinks running\n`);
table([
    { broker: "NATS JetStream", received: String(natsLag.length), "p50 ms": String(pct(natsLag, 50)), "p99 ms": String(pct(natsLag, 99)), "max ms": String(Math.max(...natsLag)) },
    { broker: "RabbitMQ", received: String(new Set(amqpIds).size), "p50 ms": String(pct(amqpLag, 50)), "p99 ms": String(pct(amqpLag, 99)), "max ms": String(Math.max(...amqpLag)) },
]);
await nc.close();
await consuming.catch(() => undefined);
await sinks.stop();
await queue.close();
await deleteStream(names.natsStream);
await bench.stop();
// Like the other benchmarks: the brokers' clients leave timers behind once closed.
process.exit(0);
