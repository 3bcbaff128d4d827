// The dashboard's live event stream (`GET /v1/events/stream`): what N open streams cost the
// database, and how long an event takes from its insert to a reader. N streams (0 first, the
// baseline, then e.g. 1, 50, 200) are spread over a few workspaces, each with a session of its
// own as a member's browser would hold; events are recorded at a steady rate into those
// workspaces; every query the gateway's DataSource runs is counted (the pool's `query` wrapped
// here), so queries/s with N streams minus the baseline's is what the streams cost. Latency is
// from the event's `created_at` (taken just before its insert) to its arrival at a reader, over
// real HTTP, per delivery. The readers share the gateway's process (both sides of one loop).
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/event-stream.ts [--streams 1,50,200] [--workspaces 4] [--rate 20] [--seconds 10]
import { parseArgs } from "node:util";
import { SESSION_COOKIE } from "../server/auth/session-cookie.js";
import { recordEvent } from "../server/events/record.js";
import { newId } from "../server/ids.js";
import { randomToken, sha256 } from "../server/secrets.js";
import { openEventStream } from "../test/support/sse.js";
import { startBench, table } from "./harness.js";

const { values } = parseArgs({
  options: {
    streams: { type: "string", default: "1,50,200" },
    workspaces: { type: "string", default: "4" },
    rate: { type: "string", default: "20" },
    seconds: { type: "string", default: "10" },
  },
});
const counts = [0, ...values.streams.split(",").map(Number)];
const workspaceCount = Number(values.workspaces);
const rate = Number(values.rate);
const seconds = Number(values.seconds);

const bench = await startBench({}, 0);
const { db, services } = bench.gateway.ctx;

let queries = 0;
const query = db.query.bind(db);
db.query = ((...args: Parameters<typeof db.query>) => {
  queries++;
  return query(...args);
}) as typeof db.query;

const workspaces: { id: string; userId: string }[] = [];
for (let i = 0; i < workspaceCount; i++) {
  const email = `stream-bench-${i}-${Date.now()}@example.test`;
  const ws = await services.workspaces.create(`stream bench ${i}`, email, "pro");
  const [owner] = (await query(`SELECT user_id FROM members WHERE workspace_id = $1`, [ws.id])) as { user_id: string }[];
  workspaces.push({ id: ws.id, userId: owner!.user_id });
}

/** A signed-in member's cookie: a session row as sign-in writes it (the mail round-trip is not measured). */
async function sessionCookie(ws: { id: string; userId: string }): Promise<string> {
  const token = randomToken(32);
  await query(`INSERT INTO sessions (id, token_digest, user_id, workspace_id, expires_at) VALUES ($1, $2, $3, $4, now() + interval '1 day')`, [
    newId("ses"),
    sha256(token),
    ws.userId,
    ws.id,
  ]);
  return `${SESSION_COOKIE}=${token}`;
}

interface Reader {
  workspaceId: string;
  received: Map<string, number>;
  close(): Promise<void>;
}

async function openReader(ws: { id: string; userId: string }, onEvent: (id: string, createdAt: string) => void): Promise<Reader> {
  const received = new Map<string, number>();
  const stream = await openEventStream<{ id: string; created_at: string }>(`${bench.gateway.url}/v1/events/stream`, { cookie: await sessionCookie(ws) }, (event) => {
    received.set(event.id, (received.get(event.id) ?? 0) + 1);
    onEvent(event.id, event.created_at);
  });
  if (stream.res.status !== 200) {
    await stream.close();
    throw new Error(`the stream answered ${stream.res.status}`);
  }
  return { workspaceId: ws.id, received, close: () => stream.close() };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const results: Record<string, string | number>[] = [];
let baselinePerSecond = 0;

for (const n of counts) {
  const latencies: number[] = [];
  const readers: Reader[] = [];
  for (let i = 0; i < n; i++) {
    readers.push(await openReader(workspaces[i % workspaces.length]!, (_id, createdAt) => latencies.push(Date.now() - Date.parse(createdAt))));
  }
  await sleep(1_000);
  latencies.length = 0;
  const recorded: { id: string; workspaceId: string }[] = [];
  const startQueries = queries;
  const started = Date.now();
  for (let k = 0; Date.now() - started < seconds * 1000; k++) {
    const due = started + (k * 1000) / rate;
    if (due > Date.now()) await sleep(due - Date.now());
    const workspaceId = workspaces[k % workspaces.length]!.id;
    const id = await db.transaction((em) => recordEvent(em, { workspaceId, type: "connection.connected", connection: null, data: { k } }));
    recorded.push({ id, workspaceId });
  }
  const elapsed = (Date.now() - started) / 1000;
  const perSecond = (queries - startQueries) / elapsed;
  await sleep(1_500); // the last events' deliveries
  let missing = 0;
  let doubled = 0;
  let foreign = 0;
  for (const r of readers) {
    for (const e of recorded) {
      const times = r.received.get(e.id) ?? 0;
      if (e.workspaceId === r.workspaceId) {
        if (times === 0) missing++;
        if (times > 1) doubled++;
      } else if (times > 0) foreign++;
    }
  }
  await Promise.all(readers.map((r) => r.close()));
  if (n === 0) baselinePerSecond = perSecond;
  const sorted = latencies.sort((a, b) => a - b);
  results.push({
    streams: n,
    "events/s": Math.round(recorded.length / elapsed),
    deliveries: latencies.length,
    "queries/s": perSecond.toFixed(1),
    "stream queries/s": (perSecond - baselinePerSecond).toFixed(1),
    "ratio to 0 streams": (perSecond / baselinePerSecond).toFixed(2),
    "p50 ms": percentile(sorted, 50),
    "p99 ms": percentile(sorted, 99),
    "missing/doubled/foreign": `${missing}/${doubled}/${foreign}`,
  });
  await sleep(1_000);
}

console.log(
  `\nevent stream, ${workspaceCount} workspaces, ${rate} events/s for ${seconds} s per row, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}`,
);
table(results);
await bench.stop();
process.exit(0);
