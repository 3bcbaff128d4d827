// Baileys sockets shared by fair-share leases between gateway processes on one database (issue
// 26). Pairs `--connections` Baileys connections on an in-process gateway with the stand-in socket
// (test/support/baileys-stand-in.ts: the stand-in phone scans each QR in this process, which holds
// the socket, as test/support/baileys.ts's pairBaileys does), stops that gateway (its engine closes
// its sockets and hands the leases back; its sockets are in the log below too), then starts built gateways (`node dist/server/main.js`,
// `npm run build` first) one after another up to `--processes`, each loading the stand-in with
// BAILEYS_SOCKET_MODULE and appending every socket open/end to one STAND_IN_LOG. It prints:
//   - for each process started, the seconds from its spawn until every process holds at most its
//     share, ceil(connections / processes), and all connections are held (the new one has its
//     share; the others handed their surplus back); bound: 60 s;
//   - once settled, over `--seconds`: each process's sockets (count and %, none above 40 %), CPU
//     (utime + stime from /proc, % of one core) and RSS (VmRSS mean and max), and the load average;
//   - the last process SIGKILLed: the seconds until the others hold every connection; bound: 60 s;
//   - overlaps in the stand-in's log (a socket opened for a number while another process's was
//     still open for it: each socket is open from its `open` to its `end`, or to its process's kill);
//   - the most PostgreSQL connections the processes had open at once on the scratch database.
// Exits 1 when a check fails.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/baileys-share.ts \
//     [--connections 300] [--processes 3] [--seconds 30] [--lease-seconds 20]
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { standIn } from "../test/support/baileys-stand-in.js";
import { buildStandIn, STAND_IN_MODULE } from "../test/support/child-entry.js";
import { startBench, startGatewayProcess, table } from "./harness.js";

const { values } = parseArgs({
  options: {
    connections: { type: "string", default: "300" },
    processes: { type: "string", default: "3" },
    seconds: { type: "string", default: "30" },
    "lease-seconds": { type: "string", default: "20" },
  },
});
const connections = Math.max(1, Number(values.connections));
const processes = Math.max(2, Number(values.processes));
const seconds = Math.max(5, Number(values.seconds));
const leaseSeconds = Number(values["lease-seconds"]);
/** A new process has its share, and a killed one's share is taken over, within a minute (issue 26). */
const BOUND_MS = 60_000;
/** No process above this fraction of the sockets once settled (issue 26). */
const MAX_FRACTION = 0.4;
const step = (what: string) => console.log(`[${new Date().toISOString()}] ${what}`);
if (!process.env.DATABASE_URL) throw new Error("set DATABASE_URL: several gateway processes share one PostgreSQL database");
if (!existsSync("dist/server/main.js")) throw new Error("no dist/server/main.js: run `npm run build` first");

const failures: string[] = [];
const check = (ok: boolean, what: string) => {
  if (!ok) failures.push(what);
  return ok;
};

// The set-up gateway: Baileys connections through the stand-in, which this process loads too (tsx).
// Every socket's open and end, the set-up gateway's included (this process's stand-in writes there too).
const log = join(mkdtempSync(join(tmpdir(), "svc-baileys-share-")), "stand-in.log");
process.env.STAND_IN_LOG = log;
const env = { TRANSPORT: "baileys", BAILEYS_SOCKET_MODULE: STAND_IN_MODULE, BAILEYS_LEASE_SECONDS: String(leaseSeconds) };
step(`setting up ${connections} paired Baileys connection(s) on an in-process gateway (stand-in socket, 10 at a time)`);
const bench = await startBench(env, 0);
const base = bench.gateway.url;
const headers = { authorization: `Bearer ${bench.apiKey}`, "content-type": "application/json" };
const api = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
  const res = await fetch(`${base}${path}`, { headers, ...init });
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
};
/** Create, pair, redeem the QR; the stand-in phone scans it on the socket this process holds; wait until connected. */
const pairOne = async (i: number): Promise<string> => {
  const slug = `share-${i}`;
  const phone = `+1996${String(i).padStart(7, "0")}`;
  const created = await api<{ id: string }>(`/v1/connections`, { method: "POST", body: JSON.stringify({ slug }) });
  const grant = await api<{ grant_id: string }>(`/v1/connections/${slug}/pair`, { method: "POST" });
  const qr = await api<{ payload: string }>(`/v1/connections/${slug}/qr/${grant.grant_id}`);
  const socket = standIn.live(created.id);
  if (!socket?.qrs.includes(qr.payload)) throw new Error(`${slug}: the redeemed QR is not one its socket shows`);
  socket.scan(phone, String(100_000_000_000 + i));
  for (let n = 0; n < 400; n++) {
    const c = await api<{ state: string; phone: string | null }>(`/v1/connections/${slug}`);
    if (c.state === "connected" && c.phone === phone) return created.id;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${slug} did not connect`);
};
const pairStarted = Date.now();
const ids: string[] = [];
let next = 0;
await Promise.all(
  Array.from({ length: 10 }, async () => {
    for (let i = next++; i < connections; i = next++) ids.push(await pairOne(i));
  }),
);
const pairSeconds = (Date.now() - pairStarted) / 1000;
const databaseUrl = bench.gateway.database.url;
const database = new URL(databaseUrl).pathname.slice(1);
const secretKey = bench.gateway.ctx.config.secretKey.toString("base64");
const [counted] = (await bench.gateway.ctx.db.query(`SELECT count(*)::int AS n FROM connections WHERE transport = 'baileys' AND state = 'connected' AND deleted_at IS NULL`)) as { n: number }[];
step(`${counted!.n} connected in ${pairSeconds.toFixed(1)} s; stopping the set-up gateway (its sockets closed, leases handed back)`);
if (counted!.n !== connections) throw new Error(`${counted!.n} of ${connections} connections connected`);
await bench.gateway.stop();

// The children: the build, with the stand-in compiled beside it (as test runs from dist/ do).
buildStandIn();
const builtStandIn = join("dist", "test", "support", "baileys-stand-in.js");
const stats = new pg.Client({ connectionString: databaseUrl });
await stats.connect();

/** Live leases per holding process id. */
const holders = async (): Promise<Map<number, number>> => {
  const r = await stats.query<{ pid: number; n: number }>(`SELECT split_part(holder, ':', 2)::int AS pid, count(*)::int AS n FROM baileys_leases WHERE expires_at > now() GROUP BY 1`);
  return new Map(r.rows.map((x) => [x.pid, x.n]));
};
let peakDb = 0;
/** The most at once of each application_name ("svc-gateway": the processes' pools; "svc-gateway jobs": the job runners'). */
const peakByName = new Map<string, number>();
const sampleDb = async () => {
  const r = await stats.query<{ name: string; n: number }>(`SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() GROUP BY 1`, [database]);
  peakDb = Math.max(peakDb, r.rows.reduce((sum, x) => sum + x.n, 0));
  for (const x of r.rows) peakByName.set(x.name || "(none)", Math.max(peakByName.get(x.name || "(none)") ?? 0, x.n));
};
/** Waits until `pids` hold every connection, none above its share; the moment, or null past `withinMs`. */
const settle = async (pids: number[], withinMs: number): Promise<{ at: number; counts: Map<number, number> } | null> => {
  const share = Math.ceil(connections / pids.length);
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    const counts = await holders();
    await sampleDb();
    const held = pids.reduce((sum, pid) => sum + (counts.get(pid) ?? 0), 0);
    if (held === connections && pids.every((pid) => (counts.get(pid) ?? 0) <= share)) return { at: Date.now(), counts };
    await new Promise((r) => setTimeout(r, 200));
  }
  return null;
};

const childEnv = { ...env, BAILEYS_SOCKET_MODULE: builtStandIn, STAND_IN_LOG: log, LOG_LEVEL: "warn" };
const children: ChildProcess[] = [];
const starts: Record<string, string | number>[] = [];
for (let n = 1; n <= processes; n++) {
  const spawned = Date.now();
  const child = await startGatewayProcess({ databaseUrl, secretKey, args: ["dist/server/main.js"], env: childEnv, readyMs: 120_000 });
  children.push(child);
  const ready = Date.now();
  step(`process ${n} (pid ${child.pid}) ready in ${((ready - spawned) / 1000).toFixed(1)} s; waiting for the shares`);
  const settled = await settle(children.map((c) => c.pid!), BOUND_MS + 60_000);
  const took = settled ? (settled.at - spawned) / 1000 : null;
  check(took !== null && took * 1000 <= BOUND_MS, `process ${n}: its share not taken within ${BOUND_MS / 1000} s of its start (${took === null ? "not within 120 s" : `${took.toFixed(1)} s`})`);
  const counts = settled?.counts ?? (await holders());
  starts.push({
    "process started": n,
    pid: child.pid!,
    "ready s": ((ready - spawned) / 1000).toFixed(1),
    "shares settled s (from spawn)": took === null ? "not settled" : took.toFixed(1),
    "share each": Math.ceil(connections / n),
    "held per process": children.map((c) => counts.get(c.pid!) ?? 0).join(" / "),
  });
}
console.log(`\nA new process takes its share (bound ${BOUND_MS / 1000} s from its spawn)`);
table(starts);

// Settled: sockets, CPU and RSS of each process over `seconds`.
const cpuTicks = (pid: number) => {
  // utime and stime: fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 a second).
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
};
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
step(`settled; measuring ${seconds} s`);
const pids = children.map((c) => c.pid!);
const t0 = Date.now();
const ticks0 = pids.map(cpuTicks);
const rss = pids.map(() => [] as number[]);
const most = new Map<number, number>(pids.map((p) => [p, 0]));
let lastCounts = await holders();
while (Date.now() - t0 < seconds * 1000) {
  pids.forEach((pid, i) => rss[i]!.push(rssMb(pid)));
  lastCounts = await holders();
  for (const pid of pids) most.set(pid, Math.max(most.get(pid)!, lastCounts.get(pid) ?? 0));
  await sampleDb();
  await new Promise((r) => setTimeout(r, 1000));
}
const elapsed = (Date.now() - t0) / 1000;
const load = loadavg();
console.log(`\nSettled, ${processes} processes x ${connections} connections, over ${elapsed.toFixed(0)} s`);
table(
  pids.map((pid, i) => {
    const held = lastCounts.get(pid) ?? 0;
    check(most.get(pid)! / connections <= MAX_FRACTION, `process ${i + 1} held ${most.get(pid)} sockets (${((most.get(pid)! / connections) * 100).toFixed(1)} %), above ${MAX_FRACTION * 100} %`);
    return {
      process: i + 1,
      pid,
      sockets: held,
      "% of sockets": ((held / connections) * 100).toFixed(1),
      "most seen": most.get(pid)!,
      "CPU % of a core": (((cpuTicks(pid) - ticks0[i]!) / 100 / elapsed) * 100).toFixed(2),
      "RSS mean MB": (rss[i]!.reduce((a, b) => a + b, 0) / rss[i]!.length).toFixed(0),
      "RSS max MB": Math.max(...rss[i]!).toFixed(0),
    };
  }),
);
console.log(`load average: ${load.map((l) => l.toFixed(2)).join(" ")}`);

// The last process is killed: its leases lapse and the others take its share.
const victim = children.pop()!;
victim.kill("SIGKILL");
await new Promise((r) => victim.once("exit", r));
const killedAt = Date.now();
step(`process ${processes} (pid ${victim.pid}) killed (SIGKILL); waiting for the others to hold all ${connections}`);
const takenOver = await settle(children.map((c) => c.pid!), BOUND_MS + 60_000);
const overSeconds = takenOver ? (takenOver.at - killedAt) / 1000 : null;
check(overSeconds !== null && overSeconds * 1000 <= BOUND_MS, `the killed process's share not taken over within ${BOUND_MS / 1000} s (${overSeconds === null ? "not within 120 s" : `${overSeconds.toFixed(1)} s`})`);
const after = takenOver?.counts ?? (await holders());
console.log(
  `\nkilled process's share taken over: ${overSeconds === null ? "NOT within 120 s" : `${overSeconds.toFixed(1)} s`} after the kill ` +
    `(bound ${BOUND_MS / 1000} s; lease ${leaseSeconds} s); held now: ${children.map((c) => after.get(c.pid!) ?? 0).join(" / ")}`,
);

// Never two sockets open at once for one number, as the stand-in saw them.
interface Entry {
  pid: number;
  at: number;
  event: "open" | "send" | "end" | "closed";
  connection: string;
}
const entries = readFileSync(log, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Entry);
const overlaps: string[] = [];
for (const id of ids) {
  const open = new Map<number, number>();
  const intervals: { from: number; to: number; pid: number }[] = [];
  for (const e of entries.filter((x) => x.connection === id)) {
    if (e.event === "open") open.set(e.pid, e.at);
    if (e.event === "end" && open.has(e.pid)) {
      intervals.push({ from: open.get(e.pid)!, to: e.at, pid: e.pid });
      open.delete(e.pid);
    }
  }
  for (const [pid, from] of open) intervals.push({ from, to: pid === victim.pid ? killedAt : Infinity, pid });
  intervals.sort((x, y) => x.from - y.from);
  for (let i = 1; i < intervals.length; i++) {
    const [a, b] = [intervals[i - 1]!, intervals[i]!];
    if (b.from < a.to) overlaps.push(`${id}: opened by ${b.pid} at ${new Date(b.from).toISOString()} while ${a.pid}'s was open (until ${Number.isFinite(a.to) ? new Date(a.to).toISOString() : "the end"})`);
  }
}
const opens = entries.filter((e) => e.event === "open").length;
const ends = entries.filter((e) => e.event === "end").length;
console.log(`stand-in log: ${opens} socket opens, ${ends} ends over ${ids.length} numbers`);
console.log(overlaps.length ? `overlaps: ${overlaps.length}\n  ${overlaps.join("\n  ")}` : "overlaps: 0");
check(overlaps.length === 0, `${overlaps.length} overlap(s): two sockets open at once for one number`);
console.log(
  `PostgreSQL connections on the scratch database, most at once: ${peakDb} (by application_name, each at its own peak: ${[...peakByName].map(([k, v]) => `${k} ${v}`).join(", ")}; each process: a pool of at most 20 (server/db/data-source.ts), the job runner's 4 (jobs/runner.ts) and one LISTEN; ` +
    `no DATABASE_POOL setting exists, none set; the set-up gateway was stopped before the processes started; max_connections 100)`,
);
console.log(`BAILEYS_LEASE_SECONDS=${leaseSeconds}${leaseSeconds === 20 ? " (the default)" : ""}: a lease poll every ${leaseSeconds / 4} s, take-up 20 per poll then again after 1 s`);

for (const c of children) c.kill("SIGTERM");
await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : undefined)));
await stats.end();
await bench.stop();
console.log(failures.length ? `\nFAILED:\n  ${failures.join("\n  ")}` : "\nall checks met");
process.exit(failures.length ? 1 : 0);
