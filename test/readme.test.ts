// The README's TypeScript, run as written: each block is copied out of README.md into a scratch
// project that sees this repository's node_modules, where `@svc/sdk` is the workspace package as
// `npm ci` leaves it (its `prepare` builds sdk/dist). A README edit that breaks a snippet, or an
// install that leaves the SDK unbuilt, fails here.
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { signWebhookPayload } from "../sdk/src/index.js";
import { newWorkspace } from "./support/actors.js";
import { freePort } from "./support/ports.js";
import { testEnv } from "./setup.js";

const repoRoot = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The ```ts blocks of README.md, in order. */
function readmeSnippets(): string[] {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

function only(snippets: string[], marker: string): string {
  const found = snippets.filter((s) => s.includes(marker));
  expect(found, `README blocks containing ${marker}`).to.have.length(1);
  return found[0]!;
}

interface Run {
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
}

function runTs(dir: string, file: string, env: Record<string, string>): Run {
  const child = spawn(process.execPath, ["--import", "tsx", file], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return { child, output: () => out, exit };
}

describe("README code, run as written", function () {
  this.timeout(60_000);
  let dir: string;
  const snippets = readmeSnippets();

  before(function () {
    expect(existsSync(join(repoRoot, "sdk/dist/sdk/src/index.js")), "sdk/dist is missing: `npm ci` runs `prepare`, which builds it").to.equal(true);
    dir = mkdtempSync(join(tmpdir(), "svc-readme-"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "readme-snippets", private: true, type: "module" }));
    symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
  });

  after(function () {
    if (!dir) return;
    // Remove the link first, so that nothing is deleted through it.
    const link = join(dir, "node_modules");
    if (existsSync(link)) unlinkSync(link);
    rmSync(dir, { recursive: true, force: true });
  });

  it("imports @svc/sdk as the installed package, not the sources", function () {
    const snippet = only(snippets, "createClient");
    expect(snippet).to.include('from "@svc/sdk"');
  });

  it("the SDK snippet prints the key's workspace and scopes", async function () {
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read"]);
    writeFileSync(join(dir, "first-call.ts"), only(snippets, "createClient"));
    const run = runTs(dir, "first-call.ts", { SVC_URL: testEnv().baseUrl, SVC_KEY: key });
    const code = await run.exit;
    expect(code, run.output()).to.equal(0);
    expect(run.output()).to.match(/^Workspace owner-[0-9a-f]+@example\.test \[ 'messages:read' \]\n$/);
  });

  it("the SDK snippet fails loudly with a bad key", async function () {
    writeFileSync(join(dir, "first-call.ts"), only(snippets, "createClient"));
    const run = runTs(dir, "first-call.ts", { SVC_URL: testEnv().baseUrl, SVC_KEY: "svc_live_not_a_key" });
    expect(await run.exit).to.not.equal(0);
    expect(run.output()).to.include("SvcApiError").and.include("401 unauthorized");
  });

  it("the webhook receiver accepts a signed delivery and refuses a forged one", async function () {
    const secret = "whsec_readme_test_secret";
    const port = await freePort();
    writeFileSync(join(dir, "receiver.ts"), only(snippets, "verifyWebhook"));
    const run = runTs(dir, "receiver.ts", { PORT: String(port), SVC_WEBHOOK_SECRET: secret });
    try {
      const url = `http://127.0.0.1:${port}/hooks/svc`;
      const deadline = Date.now() + 30_000;
      while (!(await fetch(url, { method: "POST" }).then(() => true, () => false))) {
        if (run.child.exitCode !== null || Date.now() > deadline) throw new Error(`receiver did not start:\n${run.output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const body = JSON.stringify({ id: "evt_1", type: "message.received", created_at: new Date().toISOString(), connection: "support", data: { body: "Thanks!" } });
      const t = Math.floor(Date.now() / 1000);
      const post = (signature: string) =>
        fetch(url, { method: "POST", headers: { "content-type": "application/json", "svc-signature": signature, "svc-timestamp": String(t) }, body });

      const good = await post(signWebhookPayload(secret, t, body));
      expect(good.status, run.output()).to.equal(204);
      // The receiver logs the event; its stdout is a pipe, so the line may trail the answer.
      for (let i = 0; i < 50 && !run.output().includes("message.received"); i++) await new Promise((r) => setTimeout(r, 20));
      expect(run.output()).to.include("message.received support");

      const forged = await post(signWebhookPayload("whsec_someone_else", t, body));
      expect(forged.status).to.equal(400);
      expect(await forged.text()).to.equal("signature_mismatch");
    } finally {
      run.child.kill("SIGTERM");
      await run.exit;
    }
  });
});
