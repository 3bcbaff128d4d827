// Shared set-up for benchmarks: a gateway on a scratch database (the machine's PostgreSQL when
// DATABASE_URL is set, else the embedded one), a workspace with a key and a paired sandbox
// connection, and autocannon run as a separate process so the load generator does not share the
// gateway's event loop.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import type { AddressInfo } from "node:net";
import express from "express";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { loadConfig } from "../server/config.js";
import { newId } from "../server/ids.js";
import { startGateway, type Gateway } from "../server/gateway.js";
import { createLogger } from "../server/logger.js";
import { freePort } from "../test/support/ports.js";
import { createScratchDatabase } from "../test/setup.js";

const run = promisify(execFile);

export interface Bench {
  gateway: Gateway;
  apiKey: string;
  workspaceId: string;
  connectionSlugs: string[];
  stop(): Promise<void>;
}

export async function startBench(env: Record<string, string>, connections = 1): Promise<Bench> {
  let drop: (() => Promise<void>) | undefined;
  let databaseUrl = process.env.DATABASE_URL || undefined;
  if (databaseUrl) {
    const scratch = await createScratchDatabase(databaseUrl);
    databaseUrl = scratch.url;
    drop = scratch.drop;
  }
  const config = loadConfig({
    NODE_ENV: "bench",
    PORT: String(await freePort()),
    DATA_DIR: mkdtempSync(join(tmpdir(), "svc-bench-")),
    LOG_LEVEL: "silent",
    API_RATE_LIMIT_PER_MINUTE: "100000000",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...env,
  });
  const gateway = await startGateway(config, { inMemoryDatabase: true, logger: createLogger("silent") });
  const { services, db } = gateway.ctx;
  const ws = await services.workspaces.create("bench", `bench-${Date.now()}@example.test`, "enterprise");
  const [owner] = (await db.query(`SELECT m.id, m.user_id, u.email FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1`, [ws.id])) as {
    user_id: string;
    email: string;
  }[];
  const plan = await db.query(`SELECT * FROM plans WHERE id = 'enterprise'`);
  const issued = await services.apiKeys.issue(
    { kind: "session", workspaceId: ws.id, userId: owner!.user_id, sessionId: "bench", email: owner!.email, role: "owner", plan: plan[0] },
    { name: "bench", scopes: ["messages:read", "messages:write", "connections:read", "connections:write", "ai:read", "ai:write"], environment: "live" },
  );
  const slugs: string[] = [];
  for (let i = 0; i < connections; i++) {
    const slug = `bench-${i}`;
    await pair(gateway.url, issued.plaintext, slug, `+1999000${String(i).padStart(4, "0")}`);
    slugs.push(slug);
  }
  return {
    gateway,
    apiKey: issued.plaintext,
    workspaceId: ws.id,
    connectionSlugs: slugs,
    async stop() {
      await gateway.stop();
      await drop?.();
    },
  };
}

/** A connection created and paired through the sandbox over HTTP, as a user pairs one. */
/**
 * The gateway of the send benches (bench/accept.ts, bench/allocations.ts), from their
 * `--dispatcher` option: `off` accepts only (hand-off is measured by bench/end-to-end.ts); `on`
 * also hands every message to the sandbox and applies its receipts, unpaced (pacing is for real
 * numbers, the simulated network needs none).
 */
export function startSendBench(dispatcher: string | undefined): Promise<Bench> {
  if (dispatcher !== "off" && dispatcher !== "on") throw new Error(`--dispatcher ${dispatcher}: expected off or on`);
  return startBench(dispatcher === "on" ? { DISPATCH_RATE_PER_CONNECTION: "10000" } : { DISPATCHER: "off" });
}

/**
 * Waits until every message of the bench's workspace is `read` (or `failed`); answers the seconds
 * from `startedAt` (epoch ms) to the last one's final report. With the dispatcher on, a send run
 * ends here rather than with its load: the hand-offs and receipts still owed would otherwise run
 * during whatever is measured next.
 */
export async function untilRead(bench: Bench, startedAt: number): Promise<number> {
  // The run's messages only (those of earlier runs are read already), every 100 ms: the time
  // comes from the last message's updated_at, not from when the poll saw it, and the poll is
  // database work the send would be charged with (counting all the workspace's messages every
  // 20 ms cost ~40 µs of the database's CPU per message).
  for (;;) {
    const [row] = (await bench.gateway.ctx.db.query(
      `SELECT count(*) FILTER (WHERE status NOT IN ('read', 'failed'))::int AS open, max(updated_at) AS last
         FROM messages WHERE workspace_id = $1 AND created_at >= $2`,
      [bench.workspaceId, new Date(startedAt)],
    )) as { open: number; last: Date | null }[];
    if (row!.open === 0) return row!.last ? (row!.last.getTime() - startedAt) / 1000 : 0;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** POST /v1/messages/text as the send benches load it: a text to one number, a new Idempotency-Key each request. */
export function sendRequest(bench: Bench): { url: string; headers: Record<string, string>; body: string } {
  return {
    url: `${bench.gateway.url}/v1/messages/text`,
    headers: { "content-type": "application/json", authorization: `Bearer ${bench.apiKey}`, "idempotency-key": "bench-[<id>]" },
    body: JSON.stringify({ connection: bench.connectionSlugs[0], to: "+15550001111", body: "benchmark message" }),
  };
}

export async function pair(baseUrl: string, key: string, slug: string, phone: string): Promise<void> {
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  await fetch(`${baseUrl}/v1/connections`, { method: "POST", headers: h, body: JSON.stringify({ slug }) });
  const grant = (await (await fetch(`${baseUrl}/v1/connections/${slug}/pair`, { method: "POST", headers: h })).json()) as { grant_id: string };
  const qr = (await (await fetch(`${baseUrl}/v1/connections/${slug}/qr/${grant.grant_id}`, { headers: h })).json()) as { payload: string };
  await fetch(`${baseUrl}/sandbox/v1/scan`, { method: "POST", headers: h, body: JSON.stringify({ payload: qr.payload, phone }) });
  for (let i = 0; i < 200; i++) {
    const c = (await (await fetch(`${baseUrl}/v1/connections/${slug}`, { headers: h })).json()) as { state: string };
    if (c.state === "connected") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`connection ${slug} did not connect`);
}

export interface LoadResult {
  /**
   * Requests answered, over the time from the run's start to its last answer
   * (load-generator.ts). Not autocannon's `requests.average`, the mean of its per-second counts:
   * a run of a fixed amount ends inside a second, and that partial second's count, averaged in
   * as a whole one, made 5,000 requests in 3.2 s read 1,250 a second rather than 1,560.
   */
  requestsPerSecond: number;
  /** When the run started (epoch ms, autocannon's own start, after its process started), and how long until its last answer. */
  startedAt: number;
  answeredSeconds: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
}

/**
 * autocannon in its own process; `[<id>]` in a header becomes a unique id per request (not in the
 * body: autocannon keeps the template's Content-Length). With `bodies`, each connection cycles
 * through them: one load process spreads the load over several targets.
 */
export async function load(opts: {
  url: string;
  connections: number;
  seconds?: number;
  amount?: number;
  headers: Record<string, string>;
  body: string;
  bodies?: string[];
}): Promise<LoadResult> {
  const options = {
    url: opts.url,
    connections: opts.connections,
    method: "POST",
    headers: opts.headers,
    body: opts.body,
    ...(opts.bodies ? { requests: opts.bodies.map((body) => ({ method: "POST", body })) } : {}),
    ...(opts.amount ? { amount: opts.amount } : { duration: opts.seconds ?? 10 }),
  };
  const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "bench/load-generator.ts", JSON.stringify(options)], { maxBuffer: 64 * 1024 * 1024 });
  const last = stdout.trim().split("\n").pop();
  if (!last) throw new Error(`the load generator printed no result:\n${stderr}`);
  const r = JSON.parse(last) as {
    requests: { total: number };
    start: string;
    answeredSeconds: number;
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
  };
  return { requestsPerSecond: r.requests.total / r.answeredSeconds, startedAt: Date.parse(r.start), answeredSeconds: r.answeredSeconds, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total, non2xx: r.non2xx, errors: r.errors };
}

export function table(rows: Record<string, string | number>[]): void {
  console.table(rows);
}

/**
 * The baseline the benchmarks compare against, in the bench's own process on the gateway's own
 * pool: an Express route doing one INSERT per request and nothing else. Its URL, and a `close`.
 */
export async function startBaseline(db: Gateway["ctx"]["db"]): Promise<{ url: string; close(): void }> {
  await db.query(`CREATE TABLE IF NOT EXISTS bench_baseline (id text PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
  const app = express();
  app.use(express.json());
  app.post("/baseline", async (req, res) => {
    const id = newId("msg");
    await db.query(`INSERT INTO bench_baseline (id, body) VALUES ($1, $2)`, [id, JSON.stringify(req.body)]);
    res.status(202).json({ id });
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/baseline`, close: () => server.close() };
}

/**
 * A gateway process of its own on `databaseUrl`, as an operator starts one (`args`: the sources
 * through tsx by default, or the built `dist/server/main.js`); resolves once /readyz answers.
 */
export async function startGatewayProcess(opts: { databaseUrl: string; secretKey: string; env?: Record<string, string>; args?: string[]; readyMs?: number; port?: number }): Promise<ChildProcess> {
  const port = opts.port ?? (await freePort());
  const proc = spawn(process.execPath, opts.args ?? ["--import", "tsx", "server/main.ts"], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH ?? "",
      NODE_ENV: "bench",
      PORT: String(port),
      DATABASE_URL: opts.databaseUrl,
      DATA_DIR: mkdtempSync(join(tmpdir(), "svc-bench-child-")),
      SECRET_KEY: opts.secretKey,
      LOG_LEVEL: "warn",
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const readyMs = opts.readyMs ?? 30_000;
  const until = Date.now() + readyMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`child gateway exited ${proc.exitCode}:\n${out}`);
    if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)) return proc;
    if (Date.now() > until) {
      proc.kill("SIGKILL");
      throw new Error(`child gateway not ready within ${readyMs / 1000} s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * CPU time (µs) the machine's PostgreSQL server has used so far: every process named `postgres`
 * (the postmaster, its backends and workers), with the children it has reaped, read from /proc.
 * Undefined where there is none to read (the embedded database runs in the bench's own process,
 * which `process.cpuUsage()` counts). The benches print it per request beside the gateway's own:
 * on two cores the database's share decides a rate as much as the gateway's does.
 */
export function databaseCpuMicros(): number | undefined {
  let ticks = 0;
  let found = false;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile
    }
    if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== "postgres") continue;
    // After the command: state, ppid, …; utime, stime, cutime, cstime are fields 14-17 of stat(5).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    found = true;
  }
  // Linux reports these in USER_HZ, 100 a second on every architecture Node runs on.
  return found ? ticks * 10_000 : undefined;
}

/**
 * Counts the CPU the bench's process (gateway and baseline alike) and the database server spend
 * from now: `per(n)` answers each per one of `n` requests or messages, in whole µs ("in process"
 * for the database when it is the embedded one, whose CPU is the process's).
 */
export function cpuMeter(bench: Bench): { per(n: number): { process: number; database: number | "in process" } } {
  const own = process.cpuUsage();
  const embedded = bench.gateway.database.embedded;
  const database = embedded ? undefined : databaseCpuMicros();
  return {
    per(n) {
      const used = process.cpuUsage(own);
      const now = embedded ? undefined : databaseCpuMicros();
      return {
        process: Math.round((used.user + used.system) / n),
        database: database === undefined || now === undefined ? "in process" : Math.round((now - database) / n),
      };
    },
  };
}
