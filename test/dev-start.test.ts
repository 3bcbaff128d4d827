// `npm start` as a new user runs it: on a first start it says what it is doing until it is ready,
// `svc-gateway health` finds it through DATA_DIR's pid file (not at localhost:3000), and a SIGTERM
// to npm's pid stops the gateway, freeing the port and DATA_DIR.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { scratchDir } from "./setup.js";
import { freePort } from "./support/ports.js";
import { cliWith } from "./support/cli.js";
import { waitFor } from "./support/wait.js";

/** The messages of the JSON log lines in `output`, in order. */
function messages(output: string): string[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);
}

describe("npm start", function () {
  this.timeout(180_000);

  it("says what it does on a first start, is found by `svc-gateway health`, and stops on a SIGTERM to npm", async () => {
    const port = await freePort();
    const dataDir = scratchDir("npm-start-");
    // What a user's shell has: no test settings, the embedded database.
    const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: undefined, NODE_ENV: undefined, BASE_URL: undefined };
    const npm = spawn("npm", ["start"], { env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    npm.stdout.on("data", (d: Buffer) => (out += d.toString()));
    npm.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitFor(() => fetch(`${url}/readyz`).then((r) => r.status).catch(() => 0), (s) => s === 200 || npm.exitCode !== null, 150_000, 200);
      expect(npm.exitCode, out).to.equal(null);
      // Each step of a first start is said as it begins, before the gateway is ready.
      const said = messages(out);
      const steps = [/^starting: loading the gateway's modules$/, /^listening on /, /^embedded PostgreSQL: first start, /, /^applying database migrations$/, /^starting the job runner$/, /^created the first workspace/];
      let at = -1;
      for (const step of steps) {
        const index = said.findIndex((m, i) => i > at && step.test(m));
        expect(index, `${step} after line ${at} of:\n${said.join("\n")}`).to.be.greaterThan(at);
        at = index;
      }
      // The pid file names the HTTP address; health reads it (BASE_URL unset would say localhost:3000).
      expect(readFileSync(join(dataDir, "svc-gateway.pid"), "utf8").split("\n")[2]).to.equal(url);
      const health = await cliWith({ DATABASE_URL: undefined, BASE_URL: undefined, DATA_DIR: dataDir }, "health");
      expect(health.code, health.stdout + health.stderr).to.equal(0);
      expect(health.stdout).to.include(`200 {"status":"ready"} (${url})`);
    } finally {
      npm.kill("SIGTERM");
    }
    expect(await exited, out).to.equal(0);
    // Nothing is left holding the port or DATA_DIR.
    expect(await fetch(`${url}/healthz`).then(() => "answered", () => "refused")).to.equal("refused");
    expect(existsSync(join(dataDir, "svc-gateway.pid"))).to.equal(false);
    expect(messages(out)).to.include("shutting down: finishing requests and jobs in flight");
  });
});
