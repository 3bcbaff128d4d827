// An idle gateway process: what it costs while nothing happens. Pairs `--connections` sandbox
// connections over the API (on an in-process gateway used for the set-up only), then starts the
// built gateway (`node dist/server/main.js`, `npm run build` first; `--entry tsx` runs the
// sources) alone on that database and, after it settled, prints over `--seconds`:
//   - its CPU (utime + stime from /proc, as % of one core) and its RSS (VmRSS: mean and max of
//     samples every second);
//   - the transactions it commits per second (pg_stat_database of its own scratch database: each
//     idle poll is one statement in its own transaction, so this is its idle statements per second).
// Targets with 1,000 connections: under 5 % of a core, under 600 MB.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/idle.ts \
//     [--connections 1000] [--seconds 60] [--entry dist|tsx]
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import pg from "pg";
import { pair, startBench, startGatewayProcess, table } from "./harness.js";

const { values } = parseArgs({
  options: {
    connections: { type: "string", default: "1000" },
    seconds: { type: "string", default: "60" },
    entry: { type: "string", default: "dist" },
  },
});
const connections = Math.max(1, Number(values.connections));
const seconds = Math.max(5, Number(values.seconds));
const entry = values.entry === "tsx" ? ["--import", "tsx", "server/main.ts"] : ["dist/server/main.js"];
const step = (what: string) => console.log(`[${new Date().toISOString()}] ${what}`);
if (!process.env.DATABASE_URL) throw new Error("set DATABASE_URL: the transactions are counted on a PostgreSQL scratch database");
if (values.entry !== "tsx" && !existsSync("dist/server/main.js")) throw new Error("no dist/server/main.js: run `npm run build` first (or --entry tsx)");

step(`setting up ${connections} paired sandbox connection(s)`);
const bench = await startBench({}, 1);
const { url: gatewayUrl } = bench.gateway;
let next = 1;
await Promise.all(
  Array.from({ length: 10 }, async () => {
    for (let i = next++; i < connections; i = next++) await pair(gatewayUrl, bench.apiKey, `idle-${i}`, `+1997${String(i).padStart(7, "0")}`);
  }),
);
const databaseUrl = bench.gateway.database.url;
const secretKey = bench.gateway.ctx.config.secretKey.toString("base64");
const [counted] = (await bench.gateway.ctx.db.query(`SELECT count(*)::int AS n FROM connections WHERE state = 'connected' AND deleted_at IS NULL`)) as { n: number }[];
// The set-up gateway is stopped (its database kept): the measured process is alone on it.
await bench.gateway.stop();

step(`starting the gateway (${entry.join(" ")}) with ${counted!.n} connected connection(s)`);
const child = await startGatewayProcess({ databaseUrl, secretKey, args: entry, readyMs: 120_000 });
step("ready; settling 15 s");
await new Promise((r) => setTimeout(r, 15_000));

const stats = new pg.Client({ connectionString: process.env.DATABASE_URL });
await stats.connect();
const database = new URL(databaseUrl).pathname.slice(1);
const transactions = async () => {
  // Counters are flushed by each backend within a second: read after a pause, compare deltas.
  const r = await stats.query<{ n: string }>(`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1`, [database]);
  return Number(r.rows[0]!.n);
};
const cpuTicks = () => {
  // utime and stime: fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 a second).
  const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
};
const rssMb = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) / 1024;

step(`measuring ${seconds} s`);
const t0 = Date.now();
const ticks0 = cpuTicks();
const tx0 = await transactions();
const rss: number[] = [];
while (Date.now() - t0 < seconds * 1000) {
  rss.push(rssMb());
  await new Promise((r) => setTimeout(r, 1000));
}
const elapsed = (Date.now() - t0) / 1000;
const cpu = ((cpuTicks() - ticks0) / 100 / elapsed) * 100;
const tx = ((await transactions()) - tx0) / elapsed;
await stats.end();

console.log(`\nidle gateway process, ${counted!.n} connected sandbox connection(s), ${entry.join(" ")}, PostgreSQL, ${elapsed.toFixed(0)} s`);
table([
  {
    connections: counted!.n,
    "CPU % of a core": cpu.toFixed(2),
    "RSS mean MB": (rss.reduce((a, b) => a + b, 0) / rss.length).toFixed(0),
    "RSS max MB": Math.max(...rss).toFixed(0),
    "transactions/s": tx.toFixed(1),
  },
]);
console.log(`load average: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
const ok = cpu < 5 && Math.max(...rss) < 600;
console.log(`target: under 5 % of a core and under 600 MB → ${ok ? "met" : "NOT met"}`);

child.kill("SIGTERM");
await new Promise((r) => child.once("exit", r));
await bench.stop();
process.exit(ok ? 0 : 1);
