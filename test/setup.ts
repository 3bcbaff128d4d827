// One gateway for the whole run, started the way a user starts it: over real HTTP, on a real
// PostgreSQL (a fresh database created for this run when DATABASE_URL is set, else the embedded
// one in memory), with mail going to a loopback SMTP server.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer, type AddressInfo } from "node:net";
import pg from "pg";
import { loadConfig } from "../server/config.js";
import { startGateway, type Gateway } from "../server/gateway.js";
import { createLogger } from "../server/logger.js";
import { Mailbox } from "./support/mailbox.js";

/** The module that replaces the Baileys library's socket in every gateway process of a test run. */
export const STAND_IN_MODULE = fileURLToPath(new URL("./support/baileys-stand-in.ts", import.meta.url));

export interface TestEnv {
  gateway: Gateway;
  mailbox: Mailbox;
  baseUrl: string;
  dataDir: string;
  /** The database URL this run uses (a fresh database, or the embedded one). */
  databaseUrl: string;
  /** The capture server's address, for gateways started by tests (SMTP_URL). */
  smtpUrl: string;
}

let env: TestEnv | undefined;
let dropDatabase: (() => Promise<void>) | undefined;

export function testEnv(): TestEnv {
  if (!env) throw new Error("test environment not started");
  return env;
}

/** Creates a throwaway database on the server of `url`, so runs never see each other's rows. */
export async function createScratchDatabase(url: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `svc_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  return {
    url: scratch.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    const mailbox = new Mailbox();
    const smtpUrl = await mailbox.start();
    const dataDir = mkdtempSync(join(tmpdir(), "svc-gateway-test-"));
    let databaseUrl = process.env.DATABASE_URL || undefined;
    if (databaseUrl) {
      const scratch = await createScratchDatabase(databaseUrl);
      databaseUrl = scratch.url;
      dropDatabase = scratch.drop;
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
      // The Baileys engine's sockets are the stand-in's (test/support/baileys-stand-in.ts).
      BAILEYS_SOCKET_MODULE: STAND_IN_MODULE,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    });
    const gateway = await startGateway(config, { inMemoryDatabase: true, logger: createLogger(config.logLevel) });
    env = { gateway, mailbox, baseUrl: gateway.url, dataDir, databaseUrl: gateway.database.url, smtpUrl };
  },

  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    if (!env) return;
    await env.gateway.stop();
    await env.mailbox.stop();
    rmSync(env.dataDir, { recursive: true, force: true });
    await dropDatabase?.();
  },
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
