// Webhook delivery: 10,000 events fanned out to 3 local receivers (30,000 deliveries). Events are
// inserted straight into the `events` outbox (our own table, with the payload buildEvent makes),
// so the figures are those of fan-out and delivery alone, not of accepting and handing off sends
// (bench/end-to-end.ts measures those). The receivers run in a child process, so they do not share
// the gateway's event loop; they answer 200 at once, verify every signature with the SDK helper
// and record when each delivery arrived.
//
// Two runs: `paced` inserts the events at --rate events a second (default 150, i.e. 450
// deliveries/s offered, 1.5x the target) and measures the latency from the event's creation to
// its receipt; `burst` inserts them all at once and measures how fast the backlog drains.
// Target: ≥ 300 deliveries/s, p99 event-to-receipt under 2 s, nothing lost or doubled.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/webhooks.ts [--events 10000] [--rate 150] [--mode paced|burst|both]
import { fork, type ChildProcess } from "node:child_process";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { verifyWebhook } from "../sdk/src/webhooks.js";
import { buildEvent } from "../server/events/record.js";
import type { SessionPrincipal } from "../server/http/principal.js";
import { Plan } from "../server/workspace/entities.js";
import { startBench, table, type Bench } from "./harness.js";

const RECEIVERS = 3;

type Receipt = [eventId: string, receiver: number, receivedAtMs: number];
type ToChild = { secrets: string[] } | { dump: true };
type FromChild = { ports: number[] } | { count: number; badSignatures: number } | { receipts: Receipt[]; badSignatures: number };

if (process.argv.includes("--receivers")) await runReceivers();
else await main();

/** The child: three HTTP receivers on loopback. */
async function runReceivers(): Promise<void> {
  const receipts: Receipt[] = [];
  let secrets: string[] = [];
  let badSignatures = 0;
  const send = (m: FromChild) => process.send!(m);
  const ports: number[] = [];
  for (let i = 0; i < RECEIVERS; i++) {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const at = Date.now();
        const payload = Buffer.concat(chunks);
        try {
          verifyWebhook({ payload, headers: req.headers, secret: secrets[i]! });
        } catch {
          badSignatures++;
        }
        receipts.push([String(req.headers["svc-event-id"]), i, at]);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    ports.push((server.address() as AddressInfo).port);
  }
  process.on("message", (m: ToChild) => {
    if ("secrets" in m) secrets = m.secrets;
    else send({ receipts, badSignatures });
  });
  setInterval(() => send({ count: receipts.length, badSignatures }), 100).unref();
  send({ ports });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { events: { type: "string", default: "10000" }, rate: { type: "string", default: "150" }, mode: { type: "string", default: "both" } },
  });
  const total = Number(values.events);
  const rate = Number(values.rate);
  const modes = values.mode === "both" ? ["paced", "burst"] : [values.mode!];

  const bench = await startBench({ WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }, 0);
  const child = fork(fileURLToPath(import.meta.url), ["--receivers"], { execArgv: ["--import", "tsx"], stdio: "inherit" });
  const state = { count: 0, badSignatures: 0, dump: undefined as undefined | { receipts: Receipt[]; badSignatures: number } };
  const ports = await new Promise<number[]>((resolve) => {
    child.on("message", (m: FromChild) => {
      if ("ports" in m) resolve(m.ports);
      else if ("count" in m) Object.assign(state, m);
      else state.dump = m;
    });
  });

  const principal = await ownerPrincipal(bench);
  const secrets: string[] = [];
  for (const port of ports) {
    const endpoint = await bench.gateway.ctx.services.webhooks.create(principal, { url: `http://127.0.0.1:${port}/hook`, events: ["message.delivered"] });
    secrets.push(endpoint.secret);
  }
  child.send({ secrets } satisfies ToChild);

  console.log(`\nwebhooks: ${total} events x ${RECEIVERS} receivers, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}`);
  const results: Record<string, string | number>[] = [];
  for (const mode of modes) {
    results.push(await run(bench, child, state, mode as "paced" | "burst", total, rate));
  }
  table(results);
  console.log("target: ≥ 300 deliveries/s, p99 event-to-receipt < 2000 ms (paced), lost 0, doubled 0, bad signatures 0");
  child.kill();
  await bench.stop();
  process.exit(0);
}

async function run(
  bench: Bench,
  child: ChildProcess,
  state: { count: number; badSignatures: number; dump: undefined | { receipts: Receipt[]; badSignatures: number } },
  mode: "paced" | "burst",
  total: number,
  rate: number,
): Promise<Record<string, string | number>> {
  const db = bench.gateway.ctx.db;
  const baseline = state.count;
  const created = new Map<string, number>();
  const connection = { id: "con_bench", slug: "bench" };
  const insert = async (n: number) => {
    const now = new Date();
    const events = Array.from({ length: n }, () =>
      buildEvent({ workspaceId: bench.workspaceId, type: "message.delivered", connection, data: sampleMessage() }, now),
    );
    for (const e of events) created.set(e.id, now.getTime());
    await db.query(
      `INSERT INTO events (id, workspace_id, type, connection_id, payload, created_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])`,
      [events.map((e) => e.id), events.map((e) => e.workspaceId), events.map((e) => e.type), events.map((e) => e.connectionId), events.map((e) => JSON.stringify(e.payload)), events.map((e) => e.createdAt)],
    );
  };

  const started = Date.now();
  const cpuBefore = process.cpuUsage();
  if (mode === "burst") {
    for (let done = 0; done < total; done += 1000) await insert(Math.min(1000, total - done));
  } else {
    let inserted = 0;
    while (inserted < total) {
      const due = Math.min(total, Math.floor(((Date.now() - started) / 1000) * rate));
      if (due > inserted) {
        await insert(due - inserted);
        inserted = due;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const insertedAt = Date.now();
  const expected = total * RECEIVERS;
  const deadline = Date.now() + 10 * 60_000;
  while (state.count - baseline < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const cpu = process.cpuUsage(cpuBefore);
  // A little longer, so a doubled delivery arriving late is counted.
  await new Promise((r) => setTimeout(r, 1500));
  state.dump = undefined;
  child.send({ dump: true } satisfies ToChild);
  const dump = await waitForDump(state);
  const receipts = dump.receipts.filter(([id]) => created.has(id));

  const seen = new Map<string, number>();
  const latencies: number[] = [];
  let first = Infinity;
  let last = 0;
  for (const [id, receiver, at] of receipts) {
    const key = `${id}/${receiver}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    if (seen.get(key) === 1) latencies.push(at - created.get(id)!);
    first = Math.min(first, at);
    last = Math.max(last, at);
  }
  const lost = expected - seen.size;
  const doubled = [...seen.values()].reduce((n, c) => n + (c - 1), 0);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
  const [attempts] = (await db.query(
    `SELECT count(*)::int AS attempts, count(*) FILTER (WHERE a.error_code IS NOT NULL)::int AS failed
       FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = ANY($1::text[])`,
    [[...created.keys()]],
  )) as { attempts: number; failed: number }[];
  return {
    mode: mode === "paced" ? `paced ${rate} ev/s` : "burst",
    deliveries: seen.size,
    "insert s": ((insertedAt - started) / 1000).toFixed(1),
    "deliveries/s": Math.round((seen.size / Math.max(1, last - started)) * 1000),
    "p50 ms": pct(50),
    "p99 ms": pct(99),
    "max ms": latencies.at(-1) ?? NaN,
    lost,
    doubled,
    "failed attempts": attempts!.failed,
    "bad signatures": dump.badSignatures,
    // CPU of this process (gateway, fan-out, delivery and the event inserts), per delivery.
    "gateway CPU ms/delivery": ((cpu.user + cpu.system) / 1000 / Math.max(1, seen.size)).toFixed(2),
  };
}

async function waitForDump(state: { dump: undefined | { receipts: Receipt[]; badSignatures: number } }): Promise<{ receipts: Receipt[]; badSignatures: number }> {
  for (;;) {
    if (state.dump) return state.dump;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function sampleMessage(): Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    id: `msg_${Math.random().toString(36).slice(2, 14)}`,
    object: "message",
    connection: "bench",
    direction: "outbound",
    status: "delivered",
    to: "+15550002222",
    body: "Your order #1234 has shipped and will arrive on Thursday.",
    metadata: { order: "1234" },
    created_at: now,
    updated_at: now,
  };
}

async function ownerPrincipal(bench: Bench): Promise<SessionPrincipal> {
  const db = bench.gateway.ctx.db;
  const [owner] = (await db.query(`SELECT m.user_id, u.email FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1`, [bench.workspaceId])) as {
    user_id: string;
    email: string;
  }[];
  const plan = await db.getRepository(Plan).findOneByOrFail({ id: "enterprise" });
  return { kind: "session", workspaceId: bench.workspaceId, userId: owner!.user_id, sessionId: "bench", email: owner!.email, role: "owner", plan };
}
