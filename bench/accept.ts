// Accept rate: POST /v1/messages/text at 50 concurrent clients, against a baseline Express route
// in the same process doing one INSERT per request on the same database pool. The full send path
// (authentication, scope, validation, idempotency claim, the accepting statement) should reach at
// least 85 % of the baseline's throughput with dispatching off (the accept path alone), 60 % with
// it on (`--dispatcher on`: the same process hands every accepted message to the sandbox and takes
// its receipts meanwhile, as a single all-in-one process does; its rate counts until every
// accepted message is `read`).
//
//   npx tsx bench/accept.ts [--seconds 10] [--connections 50] [--dispatcher off|on]
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/accept.ts
import { parseArgs } from "node:util";
import { cpuMeter, load, sendRequest, startBaseline, startSendBench, table, untilRead } from "./harness.js";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "10" }, connections: { type: "string", default: "50" }, dispatcher: { type: "string", default: "off" } },
});
const dispatching = values.dispatcher === "on";
const seconds = Number(values.seconds);
const connections = Number(values.connections);

const bench = await startSendBench(values.dispatcher);
const db = bench.gateway.ctx.db;
const baseline = await startBaseline(db);
const baselineUrl = baseline.url;
const { url: sendUrl, headers, body } = sendRequest(bench);

// Warm both paths, then alternate so drift on a shared machine affects both alike.
await load({ url: baselineUrl, connections, seconds: 2, headers, body });
const warm = await load({ url: sendUrl, connections, seconds: 2, headers, body });
if (dispatching) await untilRead(bench, warm.startedAt);
// The process's CPU time per answered request beside the rate, and the database server's: less
// swayed than the rate by what else the two cores run meanwhile (the load generator, PostgreSQL).
// With the dispatcher on, a send run lasts until every message it accepted is final (`read`):
// the rate is sustained only if hand-off and receipts keep up, and work left over would otherwise
// run in the next baseline run, slowing it and flattering the ratio (2,000 messages were still
// on their way when a 5 s run ended).
const measured = async (url: string) => {
  const cpu = cpuMeter(bench);
  const run = await load({ url, connections, seconds, headers, body });
  const lasted = dispatching && url === sendUrl ? await untilRead(bench, run.startedAt) : run.answeredSeconds;
  return { ...run, requestsPerSecond: run.total / Math.max(lasted, run.answeredSeconds), cpu: cpu.per(run.total) };
};
const b1 = await measured(baselineUrl);
const s1 = await measured(sendUrl);
const b2 = await measured(baselineUrl);
const s2 = await measured(sendUrl);

const mean = (a: number, b: number) => (a + b) / 2;
const baseRps = mean(b1.requestsPerSecond, b2.requestsPerSecond);
const sendRps = mean(s1.requestsPerSecond, s2.requestsPerSecond);
console.log(`\naccept rate, ${connections} concurrent clients, ${seconds} s per run, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}, dispatcher ${values.dispatcher}`);
const row = (path: string, a: typeof b1, b: typeof b1, rps: number) => ({
  path,
  "req/s": Math.round(rps),
  "p50 ms": mean(a.p50, b.p50),
  "p99 ms": mean(a.p99, b.p99),
  "CPU µs/req": Math.round(mean(a.cpu.process, b.cpu.process)),
  "database CPU µs/req": a.cpu.database === "in process" || b.cpu.database === "in process" ? "in process" : Math.round(mean(a.cpu.database, b.cpu.database)),
  non2xx: a.non2xx + b.non2xx,
});
table([row("baseline: express + one INSERT", b1, b2, baseRps), row(dispatching ? "POST /v1/messages/text until read" : "POST /v1/messages/text", s1, s2, sendRps)]);
const [{ n } = { n: 0 }] = (await db.query(`SELECT count(*)::int AS n FROM messages WHERE workspace_id = $1`, [bench.workspaceId])) as { n: number }[];
// Issue 26's targets: the embedded database against its own baseline, else by what the process does.
const target = bench.gateway.database.embedded ? "0.50" : dispatching ? "0.60" : "0.85";
console.log(`ratio send/baseline: ${(sendRps / baseRps).toFixed(2)} (target ≥ ${target}); messages stored: ${n}`);

baseline.close();
await bench.stop();
process.exit(0);
