// The production build with TRANSPORT=baileys: compiled to dist/, run with plain node and
// NODE_ENV=production on the test database. It starts, creates connections on the Baileys
// engine, and refuses the tests' socket stand-in (a deployed gateway only talks to the network).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { createClient, expectOk } from "../sdk/src/index.js";
import { STAND_IN_MODULE, testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { childrenRunDist } from "./support/child-entry.js";
import { freePort } from "./support/child-gateway.js";
import { waitFor } from "./support/wait.js";

function productionEnv(port: number): Record<string, string> {
  const { databaseUrl, gateway } = testEnv();
  return {
    PATH: process.env.PATH ?? "",
    NODE_ENV: "production",
    TRANSPORT: "baileys",
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

describe("production build with TRANSPORT=baileys", function () {
  this.timeout(120_000);

  before(() => {
    // A current build is what the run's child gateways start from: kept, not rebuilt under them.
    if (!childrenRunDist()) execFileSync("npm", ["run", "build"], { stdio: "ignore" });
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

  it("refuses the tests' socket stand-in", () => {
    let status = 0;
    let stderr = "";
    try {
      execFileSync(process.execPath, ["dist/server/main.js"], { env: { ...productionEnv(0), BAILEYS_SOCKET_MODULE: STAND_IN_MODULE }, stdio: "pipe" });
    } catch (err) {
      status = (err as { status: number }).status;
      stderr = String((err as { stderr: Buffer }).stderr);
    }
    expect(status).to.equal(2);
    expect(stderr).to.contain("BAILEYS_SOCKET_MODULE");
  });
});
