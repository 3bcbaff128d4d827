// The test run's gateways, started the way a user starts one: over real HTTP, on a real PostgreSQL
// (a fresh database created for this process when DATABASE_URL is set, else the embedded one in
// memory), with mail going to a loopback SMTP server.
//
// Mocha runs the test files in parallel worker processes (.mocharc.cjs). Each worker starts one
// gateway, with its own scratch database, the first time a file of its needs it, and keeps it for
// every later file (mocha's root hooks run once per file in parallel mode); a serial run (files
// named on the command line) is one such process. The main process prepares what every worker
// shares before any starts (the dashboard's build, the child gateways' entry point) and drops what
// the workers leave behind once all have ended (their scratch databases, their temporary folders).
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { loadConfig } from "../server/config.js";
import { startGateway, type Gateway } from "../server/gateway.js";
import { createLogger } from "../server/logger.js";
import { ensureWebBuild } from "../server/web/build.js";
import { prepareChildGateways, STAND_IN_MODULE } from "./support/child-entry.js";
import { freePort } from "./support/ports.js";
import { Mailbox } from "./support/mailbox.js";
import { mongoEmulatorBinary, startMongoEmulator } from "./support/mongo-emulator.js";

export { STAND_IN_MODULE };

export interface TestEnv {
  gateway: Gateway;
  mailbox: Mailbox;
  baseUrl: string;
  dataDir: string;
  /** The database URL this process uses (a fresh database, or the embedded one). */
  databaseUrl: string;
  /** The capture server's address, for gateways started by tests (SMTP_URL). */
  smtpUrl: string;
  /** Set when the jobs run on the MongoDB-wire emulator (TEST_JOBS_ON_EMULATOR), not on the database. */
  jobsMongoUrl: string | undefined;
}

let env: TestEnv | undefined;
let starting: Promise<TestEnv> | undefined;
let stopping: (() => Promise<void>)[] = [];

export function testEnv(): TestEnv {
  if (!env) throw new Error("test environment not started");
  return env;
}

/** This run's id: names its scratch databases and its temporary folder, so the end of the run finds them all. */
function runId(): string {
  return (process.env.TEST_RUN_ID ??= `${process.pid.toString(36)}${Date.now().toString(36)}`);
}

/** The run's temporary folder, removed at the end of the run. */
function runDir(): string {
  const dir = join(tmpdir(), `svc-gateway-test-${runId()}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A new folder inside the run's temporary folder (a gateway's DATA_DIR). */
export function scratchDir(prefix: string): string {
  return mkdtempSync(join(runDir(), prefix));
}

/** Creates a throwaway database on the server of `url`, so runs and workers never see each other's rows. */
export async function createScratchDatabase(url: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `svc_test_${runId()}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  return { url: scratch.toString(), drop: () => dropDatabases(url, name) };
}

/** Drops the databases whose names start with `prefix` on the server of `url`, whoever is still connected. */
async function dropDatabases(url: string, prefix: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [prefix]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

async function startEnv(): Promise<TestEnv> {
  const mailbox = new Mailbox();
  const smtpUrl = await mailbox.start();
  stopping.push(() => mailbox.stop());
  const dataDir = scratchDir("data-");
  stopping.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  let databaseUrl = process.env.DATABASE_URL || undefined;
  if (databaseUrl) {
    const scratch = await createScratchDatabase(databaseUrl);
    databaseUrl = scratch.url;
    stopping.push(scratch.drop);
  }
  let jobsMongoUrl: string | undefined;
  const emulator = mongoEmulatorBinary();
  if (process.env.TEST_JOBS_ON_EMULATOR && emulator) {
    // One emulator per process: its locking holds within one job runner only.
    const started = await startMongoEmulator(emulator);
    jobsMongoUrl = started.url;
    stopping.push(async () => started.stop());
  }
  const config = loadConfig({
    NODE_ENV: "test",
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    SMTP_URL: smtpUrl,
    METRICS_TOKEN: "test-metrics-token-0123456789",
    ADMIN_EMAIL: "admin@example.test",
    LOG_LEVEL: process.env.LOG_LEVEL ?? "silent",
    API_RATE_LIMIT_PER_MINUTE: "100000",
    // Tests sign in from many simulated clients, each its own X-Forwarded-For address.
    TRUST_PROXY: "loopback",
    // Webhook receivers in tests listen on loopback; short timeout and retry delays keep the
    // timeout and retry tests fast (test/webhook-delivery.test.ts).
    OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8",
    WEBHOOK_TIMEOUT_MS: "1500",
    WEBHOOK_RETRY_SCHEDULE: "0.5,0.5,1",
    // AI runs wait out a shorter debounce than the product's 3 s (test/ai-runs.test.ts).
    AI_DEBOUNCE_MS: "1500",
    // A small media cap, so the media route's limit is tested at its edges (test/conversations-media.test.ts).
    MEDIA_MAX_BYTES: String(256 * 1024),
    // The Baileys engine's sockets are the stand-in's (test/support/baileys-stand-in.ts).
    BAILEYS_SOCKET_MODULE: STAND_IN_MODULE,
    // A Baileys connection's messages 20-50 ms apart instead of 2-5 s (test/pacing.test.ts checks the pace itself).
    BAILEYS_PACE_MS: "20-50",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...(jobsMongoUrl ? { JOBS_MONGODB_URL: jobsMongoUrl } : {}),
  });
  const gateway = await startGateway(config, { inMemoryDatabase: true, logger: createLogger(config.logLevel) });
  stopping.push(() => gateway.stop());
  return { gateway, mailbox, baseUrl: gateway.url, dataDir, databaseUrl: gateway.database.url, smtpUrl, jobsMongoUrl };
}

/** Stops what this process started, last first. */
async function stopEnv(): Promise<void> {
  const steps = stopping.reverse();
  stopping = [];
  env = undefined;
  starting = undefined;
  for (const step of steps) await step().catch((err: unknown) => console.error(err));
}

/** Main process, once, before any worker: what the workers share must not be made by several at once. */
export async function mochaGlobalSetup(): Promise<void> {
  runId();
  ensureWebBuild(createLogger("warn"), false);
  prepareChildGateways();
}

/** Main process, once every worker has ended: a worker ends without stopping its gateway. */
export async function mochaGlobalTeardown(): Promise<void> {
  if (process.env.DATABASE_URL) await dropDatabases(process.env.DATABASE_URL, `svc_test_${runId()}_`);
  rmSync(runDir(), { recursive: true, force: true });
}

let fileStart = { at: 0, cpu: process.cpuUsage() };
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    fileStart = { at: Date.now(), cpu: process.cpuUsage() };
    starting ??= startEnv();
    env = await starting;
  },

  async afterAll(this: Mocha.Context) {
    if (process.env.TEST_FILE_TIMES) {
      const cpu = process.cpuUsage(fileStart.cpu);
      const file = this.test?.parent?.suites[0]?.file ?? "?";
      appendFileSync(process.env.TEST_FILE_TIMES, `${process.env.DATABASE_URL ? "pg" : "embedded"}\t${process.version}\t${file}\t${Date.now() - fileStart.at}\t${Math.round((cpu.user + cpu.system) / 1000)}\n`);
    }
    this.timeout(60_000);
    // A worker keeps its gateway for its next file; it is dropped with the worker at the end.
    if (process.env.MOCHA_WORKER_ID === undefined) await stopEnv();
  },
};
