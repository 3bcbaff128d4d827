// End to end: 10,000 messages accepted over HTTP, handed off through the sandbox engine and
// reported back by its callbacks until `read` (or `failed`). Prints messages/s from the first
// accept to the last `read`, and the p50/p99 latency from accepted to submitted; then, in the
// same process, a baseline: the same number of requests at the same concurrency to an Express
// route doing one INSERT each on the same pool, run once before the burst and once after it, and
// the ratio of the burst to their mean (on a machine whose speed drifts, a baseline on one side
// only measured the drift: 0.23 and 0.80 for the same code); and the rows written per delivered
// message, per table. Targets (issue 26): the ratio ≥ 0.5, at most 20 rows. Both sides are
// measured warm: a first burst of 1,000 messages is delivered before the measured one, and the
// baseline's route takes 1,000 requests before its first run.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/end-to-end.ts [--messages 10000]
import { parseArgs } from "node:util";
import { cpuMeter, load, startBaseline, startBench, table } from "./harness.js";

const { values } = parseArgs({ options: { messages: { type: "string", default: "10000" }, connections: { type: "string", default: "10" } } });
const total = Number(values.messages);
const connectionCount = Number(values.connections);

// Pacing is a safety feature for real numbers; the sandbox network does not need it.
const bench = await startBench({ DISPATCH_RATE_PER_CONNECTION: "10000" }, connectionCount);
const db = bench.gateway.ctx.db;
const perConnection = Math.ceil(total / connectionCount);
/** Messages of the warm-up burst (and requests of the baseline's). */
const WARM_UP = 1_000;

// One load process (autocannon) with 50 connections, each cycling through the connections' bodies:
// a process per target would spend the machine's two cores on load generation.
const bodies = bench.connectionSlugs.map((slug) => JSON.stringify({ connection: slug, to: "+15550002222", body: "end to end" }));
const burst = (amount: number, keys: string) =>
  load({
    url: `${bench.gateway.url}/v1/messages/text`,
    connections: 50,
    amount,
    headers: { "content-type": "application/json", authorization: `Bearer ${bench.apiKey}`, "idempotency-key": `${keys}-[<id>]` },
    body: bodies[0]!,
    bodies,
  });

// Warm-up, as bench/accept.ts warms both paths: a first burst, delivered whole before the measured
// one, so that neither run pays for the JIT and cold caches (the baseline runs after this one, warm).
const warmUp = await burst(WARM_UP, "e2e-warm");
await finalCount(warmUp.total - warmUp.non2xx, new Date(0));

// The baseline, same process, same pool, same load: one INSERT per request, nothing else; warmed
// up by as many requests as the warm-up burst, then run before the burst and after it.
const baseline = await startBaseline(db);
await load({ url: baseline.url, connections: 50, amount: WARM_UP, headers: { "content-type": "application/json" }, body: bodies[0]!, bodies });
const baselineRun = async () => {
  const cpu = cpuMeter(bench);
  const result = await load({ url: baseline.url, connections: 50, amount: perConnection * connectionCount, headers: { "content-type": "application/json" }, body: bodies[0]!, bodies });
  return { ...result, cpu: cpu.per(result.total) };
};
const baseBefore = await baselineRun();

const [{ since }] = (await db.query(`SELECT now() AS since`)) as [{ since: Date }];

const writesBefore = await rowWrites();
const burstCpu = cpuMeter(bench);
const run = await burst(perConnection * connectionCount, "e2e");
const accepted = run.total - run.non2xx;

const done = await finalCount(accepted, since);
const burstCpuPer = burstCpu.per(done);
// From the load's start to the last message's final report, as the baseline's rate runs from its
// start to its last answer: not from before the load generator's process started (its start-up
// took 0.5-1 s) to a poll after it exited (it exits at the sampling tick after its last answer).
const [{ last }] = (await db.query(
  `SELECT max(updated_at) AS last FROM messages WHERE workspace_id = $1 AND created_at >= $2 AND status IN ('read', 'failed')`,
  [bench.workspaceId, since],
)) as [{ last: Date }];
const seconds = (last.getTime() - run.startedAt) / 1000;
const writes = await rowWrites(writesBefore);

const [lat] = (await db.query(
  `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
     FROM (SELECT extract(epoch FROM max(t.at) FILTER (WHERE t.status = 'submitted') - m.created_at) * 1000 AS ms
             FROM message_timeline t JOIN messages m ON m.id = t.message_id
            WHERE m.workspace_id = $1 AND m.created_at >= $2 GROUP BY t.message_id, m.created_at) x`,
  [bench.workspaceId, since],
)) as { p50: number; p99: number }[];
const [dup] = (await db.query(
  `SELECT count(*)::int AS deliveries, count(DISTINCT message_id)::int AS distinct_messages FROM sandbox_deliveries`,
)) as { deliveries: number; distinct_messages: number }[];

const [spread] = (await db.query(
  `SELECT min(n)::int AS min, max(n)::int AS max, count(*)::int AS connections
     FROM (SELECT connection_id, count(*) AS n FROM messages WHERE workspace_id = $1 AND created_at >= $2 GROUP BY connection_id) x`,
  [bench.workspaceId, since],
)) as { min: number; max: number; connections: number }[];

console.log(`\nend to end, ${accepted} messages over ${connectionCount} connections, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}`);
table([
  {
    accepted,
    "read or failed": done,
    "accept phase s": run.answeredSeconds.toFixed(1),
    "total s": seconds.toFixed(1),
    "messages/s": Math.round(done / seconds),
    "CPU µs/msg": burstCpuPer.process,
    "database CPU µs/msg": burstCpuPer.database,
    "accept→submitted p50 ms": Math.round(lat!.p50),
    "accept→submitted p99 ms": Math.round(lat!.p99),
    "network deliveries": dup?.deliveries ?? "n/a",
    "distinct messages delivered": dup?.distinct_messages ?? "n/a",
    "per connection": `${spread!.connections} × ${spread!.min}–${spread!.max}`,
  },
]);

const baseAfter = await baselineRun();
baseline.close();
const rate = done / seconds;
const baseRate = (baseBefore.requestsPerSecond + baseAfter.requestsPerSecond) / 2;
const cpuText = (c: typeof baseBefore.cpu) => `${c.process}/${c.database}`;
console.log(
  `baseline (one INSERT per request, same load): ${Math.round(baseBefore.requestsPerSecond)} req/s before the burst, ` +
    `${Math.round(baseAfter.requestsPerSecond)} after; end to end / their mean: ${(rate / baseRate).toFixed(2)}; ` +
    `CPU µs/req, process/database: ${cpuText(baseBefore.cpu)} before, ${cpuText(baseAfter.cpu)} after`,
);
console.log(
  `rows written per message: ${(writes.total / Math.max(done, 1)).toFixed(1)} ` +
    `(${(writes.inserts / Math.max(done, 1)).toFixed(1)} inserts, ${(writes.updates / Math.max(done, 1)).toFixed(1)} updates, ${(writes.deletes / Math.max(done, 1)).toFixed(1)} deletes)`,
);
table(writes.tables.map((t) => ({ table: t.table, "inserts/msg": per(t.inserts), "updates/msg": per(t.updates), "deletes/msg": per(t.deletes) })));
console.log(`targets: end to end / baseline ≥ 0.5, rows per message ≤ 20; duplicates: ${dup ? dup.deliveries - dup.distinct_messages : "n/a"}`);
await bench.stop();
process.exit(0);

/** Waits until `expected` messages created since `since` are read or failed (10 minutes at most); answers how many are. */
async function finalCount(expected: number, since: Date): Promise<number> {
  let final = 0;
  const deadline = Date.now() + 10 * 60_000;
  while (Date.now() < deadline) {
    const [row] = (await db.query(
      `SELECT count(*) FILTER (WHERE status IN ('read', 'failed'))::int AS final FROM messages WHERE workspace_id = $1 AND created_at >= $2`,
      [bench.workspaceId, since],
    )) as { final: number }[];
    final = row!.final;
    if (final >= expected) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return final;
}

function per(n: number): string {
  return (n / Math.max(done, 1)).toFixed(2);
}

interface TableWrites {
  table: string;
  inserts: number;
  updates: number;
  deletes: number;
}

/**
 * Rows written so far per table of the scratch database (PostgreSQL's statistics), or, given an
 * earlier reading, written since. A backend that went idle less than a second after its last
 * report holds its counts back for up to 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): the reading
 * waits that long first.
 */
async function rowWrites(since?: { tables: TableWrites[] }): Promise<{ tables: TableWrites[]; inserts: number; updates: number; deletes: number; total: number }> {
  await new Promise((r) => setTimeout(r, 11_000));
  const now = (await db.query(
    `SELECT relname AS table, n_tup_ins::int AS inserts, n_tup_upd::int AS updates, n_tup_del::int AS deletes
       FROM pg_stat_user_tables ORDER BY relname`,
  )) as TableWrites[];
  const before = new Map((since?.tables ?? []).map((t) => [t.table, t]));
  const tables = now
    .map((t) => {
      const b = before.get(t.table);
      return { table: t.table, inserts: t.inserts - (b?.inserts ?? 0), updates: t.updates - (b?.updates ?? 0), deletes: t.deletes - (b?.deletes ?? 0) };
    })
    .filter((t) => !since || t.inserts + t.updates + t.deletes > 0);
  const sum = (k: "inserts" | "updates" | "deletes") => tables.reduce((n, t) => n + t[k], 0);
  return { tables, inserts: sum("inserts"), updates: sum("updates"), deletes: sum("deletes"), total: sum("inserts") + sum("updates") + sum("deletes") };
}
