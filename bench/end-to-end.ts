// End to end: 10,000 messages accepted over HTTP, handed off through the sandbox engine and
// reported back by its callbacks until `delivered` (or `read`). Prints messages/s from the first
// accept to the last delivery, and the p50/p99 latency from accepted to submitted.
// Target: ≥ 500 messages/s on real PostgreSQL.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/end-to-end.ts [--messages 10000]
import { parseArgs } from "node:util";
import { load, startBench, table } from "./harness.js";

const { values } = parseArgs({ options: { messages: { type: "string", default: "10000" }, connections: { type: "string", default: "10" } } });
const total = Number(values.messages);
const connectionCount = Number(values.connections);

// Pacing is a safety feature for real numbers; the sandbox network does not need it.
const bench = await startBench({ DISPATCH_RATE_PER_CONNECTION: "10000" }, connectionCount);
const db = bench.gateway.ctx.db;
const perConnection = Math.ceil(total / connectionCount);

const started = Date.now();
const loads = bench.connectionSlugs.map((slug) =>
  load({
    url: `${bench.gateway.url}/v1/messages/text`,
    connections: Math.max(1, Math.floor(50 / connectionCount)),
    amount: perConnection,
    headers: { "content-type": "application/json", authorization: `Bearer ${bench.apiKey}`, "idempotency-key": "e2e-[<id>]" },
    body: JSON.stringify({ connection: slug, to: "+15550002222", body: "end to end" }),
  }),
);
const results = await Promise.all(loads);
const acceptedAt = Date.now();
const accepted = results.reduce((n, r) => n + r.total - r.non2xx, 0);

let done = 0;
const deadline = Date.now() + 10 * 60_000;
while (Date.now() < deadline) {
  const [row] = (await db.query(`SELECT count(*) FILTER (WHERE status IN ('delivered', 'read'))::int AS done, count(*) FILTER (WHERE status = 'failed')::int AS failed FROM messages WHERE workspace_id = $1`, [bench.workspaceId])) as { done: number; failed: number }[];
  done = row!.done + row!.failed;
  if (done >= accepted) break;
  await new Promise((r) => setTimeout(r, 100));
}
const finished = Date.now();

const [lat] = (await db.query(
  `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
     FROM (SELECT extract(epoch FROM max(t.at) FILTER (WHERE t.status = 'submitted') - min(t.at) FILTER (WHERE t.status = 'accepted')) * 1000 AS ms
             FROM message_timeline t JOIN messages m ON m.id = t.message_id
            WHERE m.workspace_id = $1 GROUP BY t.message_id) x`,
  [bench.workspaceId],
)) as { p50: number; p99: number }[];
const [dup] = (await db.query(
  `SELECT count(*)::int AS deliveries, count(DISTINCT message_id)::int AS distinct_messages FROM sandbox_deliveries`,
)) as { deliveries: number; distinct_messages: number }[];

console.log(`\nend to end, ${accepted} messages over ${connectionCount} connections, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}`);
table([
  {
    accepted,
    "delivered or final": done,
    "accept phase s": ((acceptedAt - started) / 1000).toFixed(1),
    "total s": ((finished - started) / 1000).toFixed(1),
    "messages/s": Math.round((done / (finished - started)) * 1000),
    "accept→submitted p50 ms": Math.round(lat!.p50),
    "accept→submitted p99 ms": Math.round(lat!.p99),
    "network deliveries": dup?.deliveries ?? "n/a",
    "distinct messages delivered": dup?.distinct_messages ?? "n/a",
  },
]);
console.log(`target: ≥ 500 messages/s; duplicates: ${dup ? dup.deliveries - dup.distinct_messages : "n/a"}`);
await bench.stop();
process.exit(0);
