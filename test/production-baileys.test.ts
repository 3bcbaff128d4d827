// The production build: compiled to dist/, run with plain node and NODE_ENV=production. On the
// test database it starts, creates connections on the Baileys engine (the default there), and
// refuses the tests' socket stand-in (a deployed gateway only talks to the network). On an empty
// database, the README's production command, with only the variables it names, refuses to start
// without ADMIN_EMAIL, and with it pairs a Baileys connection (the stand-in replaces the library's
// socket at module resolution, where the network would be) and signs its owner in by mail.
import { execFile, execFileSync, spawn } from "node:child_process";
import { promisify } from "node:util";
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import pg from "pg";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { createClient, expectOk } from "../sdk/src/index.js";
import { STAND_IN_MODULE, testEnv } from "./setup.js";
import { newWorkspace, signIn } from "./support/actors.js";
import { qrOf } from "./support/sandbox.js";
import { buildStandIn, childrenRunDist } from "./support/child-entry.js";
import { ownDatabase, type OwnDatabase } from "./support/own-database.js";
import { loadConfig, ConfigError } from "../server/config.js";
import { freePort } from "./support/ports.js";
import { waitFor } from "./support/wait.js";

/**
 * Runs the production entry point to its exit; answers its status and what it wrote to stderr.
 * Asynchronously: the embedded database a test starts lives in this process and must go on answering.
 */
async function runToExit(env: Record<string, string>): Promise<{ status: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, ["dist/server/main.js"], { env, timeout: 90_000 });
    return { status: 0, stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { status: e.code, stderr: e.stderr };
  }
}

let built = false;

/** dist/ and the stand-in built beside it, once for the file. */
function ensureBuild(): void {
  // A current build is what the run's child gateways start from: kept, not rebuilt under them.
  if (built || childrenRunDist()) return;
  execFileSync("npm", ["run", "build"], { stdio: "ignore" });
  buildStandIn();
  built = true;
}

function productionEnv(port: number): Record<string, string> {
  const { databaseUrl, gateway } = testEnv();
  return {
    PATH: process.env.PATH ?? "",
    NODE_ENV: "production",
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: databaseUrl,
    DATA_DIR: mkdtempSync(join(tmpdir(), "svc-gateway-prod-")),
    SECRET_KEY: gateway.ctx.config.secretKey.toString("base64"),
    // Production needs real mail: the test run's capture server.
    SMTP_URL: gateway.ctx.config.smtpUrl!,
    LOG_LEVEL: "warn",
  };
}

describe("production build", function () {
  this.timeout(120_000);

  before(ensureBuild);

  it("runs new connections on baileys unless told otherwise, and refuses TRANSPORT=sandbox in one line", () => {
    const base = { NODE_ENV: "production", DATABASE_URL: "postgres://db.example.test/x", SECRET_KEY: Buffer.alloc(32, 1).toString("base64"), BASE_URL: "https://gw.example.test", SMTP_URL: "smtp://mail.example.test" };
    expect(loadConfig(base).transport).to.equal("baileys");
    expect(loadConfig({ ...base, TRANSPORT: "baileys" }).transport).to.equal("baileys");
    expect(() => loadConfig({ ...base, TRANSPORT: "sandbox" })).to.throw(ConfigError, /^TRANSPORT=sandbox is refused with NODE_ENV=production[^\n]*$/);
    expect(() => loadConfig({ ...base, TRANSPORT: "carrier-pigeon" })).to.throw(ConfigError, "TRANSPORT");
    // Development keeps the sandbox, and the owner nobody has to name.
    const dev = { NODE_ENV: "development", DATA_DIR: testEnv().dataDir };
    expect(loadConfig(dev)).to.include({ transport: "sandbox", adminEmail: "admin@localhost" });
    expect(loadConfig(base).adminEmail).to.equal(null);
    expect(loadConfig({ ...base, ADMIN_EMAIL: "Ops@Example.test" }).adminEmail).to.equal("ops@example.test");
  });

  it("starts, and new connections run on the Baileys engine", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ["dist/server/main.js"], { env: productionEnv(port), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitFor(() => fetch(`${url}/readyz`).then((r) => r.status).catch(() => 0), (s) => s === 200, 30_000);
      // No sandbox in production.
      expect((await fetch(`${url}/sandbox/v1/faults`)).status).to.equal(404);
      const ws = await newWorkspace();
      const { key } = await ws.key(["connections:read", "connections:write", "messages:read"]);
      const client = createClient({ baseUrl: url, apiKey: key });
      const slug = `prod-${randomBytes(3).toString("hex")}`;
      const created = await expectOk(client.connections.create({ body: { slug } }));
      expect(created.transport).to.equal("baileys");
      // Not linked: the engine cannot say, and says so.
      const check = await expectOk(client.messages.checkNumber({ query: { connection: slug, phone: "+15550001234" } }));
      expect(check).to.deep.include({ checked: false, on_network: null });
    } finally {
      child.kill("SIGTERM");
      const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
      expect(code, out).to.equal(0);
    }
  });

  it("refuses the tests' socket stand-in", async () => {
    const { status, stderr } = await runToExit({ ...productionEnv(0), BAILEYS_SOCKET_MODULE: STAND_IN_MODULE });
    expect(status).to.equal(2);
    expect(stderr).to.contain("BAILEYS_SOCKET_MODULE");
  });
});

describe("production build, first start with the README's command", function () {
  this.timeout(180_000);
  let database: OwnDatabase;
  const owner = "ops@example.test";

  before(async () => {
    ensureBuild();
    database = await ownDatabase();
  });
  after(async () => {
    await database?.close();
  });

  /** The variables of the README's production command, read from README.md. */
  function readmeVariables(): string[] {
    const line = readFileSync("README.md", "utf8").split("\n").find((l) => l.startsWith("NODE_ENV=production ") && l.includes("node dist/server/main.js"));
    if (!line) throw new Error("README.md has no production command");
    return [...line.matchAll(/([A-Z_]+)=/g)].map((m) => m[1]!);
  }

  /** The README's production command: these variables and no other (PORT: a free one, not 3000). */
  function readmeEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
    const env: Record<string, string> = {
      NODE_ENV: "production",
      DATABASE_URL: database.url,
      SECRET_KEY: testEnv().gateway.ctx.config.secretKey.toString("base64"),
      BASE_URL: `http://127.0.0.1:${port}`,
      SMTP_URL: testEnv().smtpUrl,
      PORT: String(port),
      ...extra,
    };
    // Only what the README names (and PORT, which its text names beside the command).
    expect(Object.keys(env).filter((k) => k !== "PORT" && k !== "ADMIN_EMAIL")).to.have.members(readmeVariables().filter((k) => k !== "ADMIN_EMAIL"));
    if (extra.ADMIN_EMAIL) expect(readmeVariables()).to.include("ADMIN_EMAIL");
    return env;
  }

  async function workspaces(): Promise<number> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM workspaces`);
      return rows[0]!.n;
    } finally {
      await client.end();
    }
  }

  it("refuses to start on an empty database without ADMIN_EMAIL, in one line naming it", async () => {
    const { status, stderr } = await runToExit(readmeEnv(await freePort()));
    expect(status, stderr).to.equal(2);
    const lines = stderr.trim().split("\n");
    expect(lines, stderr).to.have.length(1);
    expect(lines[0]).to.match(/^svc-gateway: cannot start: ADMIN_EMAIL is required on the first start/);
    expect(await workspaces()).to.equal(0);
  });

  it("with ADMIN_EMAIL: signs the owner in by mail, pairs a Baileys connection, and moves a stranded one to Baileys", async () => {
    const port = await freePort();
    const scans = join(mkdtempSync(join(tmpdir(), "svc-gateway-scans-")), "scans.jsonl");
    // STAND_IN_SCANS is the stand-in phone's, not the gateway's: where the test says which QR it scans.
    const env = { ...readmeEnv(port, { ADMIN_EMAIL: owner }), STAND_IN_SCANS: scans };
    const child = spawn(process.execPath, ["--import", "./test/support/network-stand-in.mjs", "dist/server/main.js"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitFor(() => fetch(`${url}/readyz`).then((r) => r.status).catch(() => 0), (s) => s === 200 || child.exitCode !== null, 90_000, 100);
      expect(child.exitCode, out).to.equal(null);
      expect(await workspaces()).to.equal(1);
      // The owner signs in with the code mailed to ADMIN_EMAIL, and issues a key.
      const cookie = await signIn(owner, undefined, url);
      const session = createClient({ baseUrl: url, cookie });
      const issued = await expectOk(session.workspace.createApiKey({ body: { name: "ops", scopes: ["connections:read", "connections:write"] } }));
      const client = createClient({ baseUrl: url, apiKey: issued.key });

      const created = await expectOk(client.connections.create({ body: { slug: "front-desk" } }));
      expect(created.transport).to.equal("baileys");
      const grant = await expectOk(client.connections.pair({ params: { connection: "front-desk" } }));
      const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: "front-desk", grantId: grant.grant_id } })));
      appendFileSync(scans, JSON.stringify({ payload: qr.payload, phone: "+15550007777", lid: "123456789012" }) + "\n");
      const linked = await waitFor(() => expectOk(client.connections.get({ params: { connection: "front-desk" } })), (c) => c.state === "connected", 30_000);
      expect(linked).to.include({ phone: "+15550007777", transport: "baileys" });

      // A connection made when TRANSPORT still defaulted to sandbox here: it cannot pair until moved.
      const stranded = await expectOk(client.connections.create({ body: { slug: "made-on-sandbox" } }));
      const db = new pg.Client({ connectionString: database.url });
      await db.connect();
      await db.query(`UPDATE connections SET transport = 'sandbox' WHERE id = $1`, [stranded.id]);
      await db.end();
      const p = { params: { connection: "made-on-sandbox" } };
      expect((await client.connections.pair(p)).status).to.equal(503);
      // Not to an engine this gateway does not run, even the one it is on.
      const notHere = await client.connections.update({ ...p, body: { transport: "sandbox" } });
      expect(notHere.status).to.equal(400);
      expect((notHere.body as { detail: string }).detail).to.include("No engine named sandbox is configured");
      const moved = await expectOk(client.connections.update({ ...p, body: { transport: "baileys" } }));
      expect(moved).to.include({ id: stranded.id, transport: "baileys", state: "created" });
      expect((await expectOk(client.connections.pair(p))).grant_id).to.match(/^grt_/);
    } finally {
      child.kill("SIGTERM");
      const code = child.exitCode ?? (await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c))));
      expect(code, out).to.equal(0);
    }
  });
});
