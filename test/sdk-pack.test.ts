// Smoke test of the published artefact: `npm pack` the SDK, install the tarball into a fresh
// project, and use it from plain Node and from TypeScript, as a user would.
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(fileURLToPath(new URL("..", import.meta.url)));
const sdkDir = join(repoRoot, "sdk");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_config_update_notifier: "false" } });
}

describe("@svc/sdk packed tarball", function () {
  this.timeout(180_000);
  let workDir: string;
  let project: string;
  let installed: string;

  before(function () {
    workDir = mkdtempSync(join(tmpdir(), "svc-sdk-pack-"));
    // Pack a staged copy (sdk/ beside contract/, as in the repository) so that the build this runs
    // never races with another run, or a developer, writing sdk/dist at the same time.
    const stage = join(workDir, "repo");
    cpSync(join(repoRoot, "contract"), join(stage, "contract"), { recursive: true });
    cpSync(sdkDir, join(stage, "sdk"), { recursive: true, filter: (src) => !/[\\/](dist|node_modules)$/.test(src) });
    symlinkSync(join(repoRoot, "node_modules"), join(stage, "node_modules"), "dir");
    // NodeNext emits contract/*.ts as ESM because the root package is "type": "module".
    writeFileSync(join(stage, "package.json"), JSON.stringify({ name: "stage", private: true, type: "module" }));
    run(npm, ["pack", "--pack-destination", workDir], join(stage, "sdk"));
    const tarballs = readdirSync(workDir).filter((f) => f.endsWith(".tgz"));
    expect(tarballs, "npm pack output").to.have.length(1);

    project = join(workDir, "consumer");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }, null, 2));
    run(npm, ["install", join(workDir, tarballs[0]!), "--no-audit", "--no-fund", "--prefer-offline", "--no-package-lock"], project);
    installed = join(project, "node_modules", "@svc", "sdk");
  });

  after(function () {
    if (!workDir) return;
    // Drop the link to the repository's node_modules first, so nothing can remove through it.
    const link = join(workDir, "repo", "node_modules");
    if (existsSync(link)) unlinkSync(link);
    rmSync(workDir, { recursive: true, force: true });
  });

  it("ships only the build output, with declarations for the SDK and the contract", function () {
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { name: string; dependencies: Record<string, string> };
    expect(manifest.name).to.equal("@svc/sdk");
    expect(Object.keys(manifest.dependencies).sort()).to.deep.equal(["@ts-rest/core", "zod"]);
    const declarations = readFileSync(join(installed, "dist/sdk/src/index.d.ts"), "utf8");
    expect(declarations).to.contain("verifyWebhook");
    expect(existsSync(join(installed, "dist/contract/index.d.ts"))).to.equal(true);
    expect(existsSync(join(installed, "dist/contract/index.js"))).to.equal(true);
    expect(existsSync(join(installed, "src")), "sources are not shipped").to.equal(false);
    expect(existsSync(join(installed, "tsconfig.build.json"))).to.equal(false);
    // The main entry's declarations are plain TypeScript: nothing reachable from index.d.ts names
    // zod, ts-rest or the contract (only the opt-in `@svc/sdk/contract` and internals do).
    const seen = new Set<string>();
    const pending = ["index.d.ts"];
    while (pending.length > 0) {
      const file = pending.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const text = readFileSync(join(installed, "dist/sdk/src", file), "utf8");
      const imports = [...text.matchAll(/from "([^"]+)"/g)].map((m) => m[1]!);
      expect(imports.filter((i) => !i.startsWith("./")), `${file} imports`).to.deep.equal([]);
      pending.push(...imports.map((i) => i.slice(2).replace(/\.js$/, ".d.ts")));
    }
    expect([...seen]).to.include.members(["index.d.ts", "types.gen.d.ts", "client.d.ts"]);
  });

  it("runs from plain Node: a webhook round trip, the client and the contract", function () {
    writeFileSync(
      join(project, "smoke.mjs"),
      `import { createClient, signWebhookPayload, verifyWebhook, WebhookVerificationError } from "@svc/sdk";
import { contract, Message } from "@svc/sdk/contract";
const body = JSON.stringify({ id: "evt_1", type: "message.sent", created_at: "2025-01-01T00:00:00Z", connection: "c", data: {} });
const now = Math.floor(Date.now() / 1000);
const event = verifyWebhook({ payload: Buffer.from(body), headers: { "svc-signature": signWebhookPayload("s3cret", now, body) }, secret: "s3cret" });
if (event.id !== "evt_1") throw new Error("round trip failed");
let reason;
try { verifyWebhook({ payload: body + " ", headers: { "svc-signature": signWebhookPayload("s3cret", now, body) }, secret: "s3cret" }); }
catch (err) { reason = err instanceof WebhookVerificationError && err.reason; }
if (reason !== "signature_mismatch") throw new Error("tampering not detected: " + reason);
if (typeof createClient !== "function") throw new Error("no createClient");
const client = createClient({ baseUrl: "http://localhost:1", apiKey: "svc_test_x" });
if (typeof client.workspace.whoami !== "function" || typeof client.messages.send !== "function") throw new Error("client routes missing");
if (contract.messages.send.path !== "/v1/messages/text") throw new Error("contract missing");
if (typeof Message.parse !== "function") throw new Error("schemas missing");
console.log("ok");
`,
    );
    expect(run(process.execPath, ["smoke.mjs"], project).trim()).to.equal("ok");
  });

  it("type-checks a TypeScript consumer against the shipped declarations", function () {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", lib: ["ES2022", "DOM"], strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ["consumer.ts"],
      }),
    );
    writeFileSync(
      join(project, "consumer.ts"),
      `import { autoPaginate, createClient, expectOk, listAllMessages, SvcApiError, SvcConnectionError, verifyWebhook, type Message, type Whoami, type WebhookDelivery, type WebhookEventPayload } from "@svc/sdk";
const client = createClient({ baseUrl: "http://localhost:1", apiKey: "svc_test_x", timeout: 5000 });
export async function main(): Promise<void> {
  const me: Whoami = await expectOk(client.workspace.whoami());
  const sent: Message = await expectOk(client.messages.send({ body: { connection: "c", to: "+15550001111", body: "hi" } }));
  // @ts-expect-error the body type is precise, not any
  const wrong: number = await expectOk(client.workspace.whoami());
  // @ts-expect-error unknown fields are rejected by the contract's types
  await client.messages.send({ body: { connection: "c", to: "+15550001111", bogus: 1 } });
  for await (const m of listAllMessages(client, { status: "failed" })) void (m satisfies Message);
  for await (const d of autoPaginate(client.webhooks.listDeliveries, { params: { id: "whe_1" }, query: { status: "failed" } })) void (d satisfies WebhookDelivery);
  const event: WebhookEventPayload = verifyWebhook({ payload: "{}", headers: {}, secret: "s" });
  if (event.type === "message.delivered") void (event.data.status satisfies Message["status"]);
  if (event.type === "schedule.fired") void (event.data.schedule.id satisfies string);
  if (event.type === "ai.draft.created") void (event.data.text satisfies string);
  if (event.type === "ai.reply.sent") void (event.data.reply_message_id satisfies string);
  // @ts-expect-error the AI events' data is typed too
  if (event.type === "ai.reply.sent") void event.data.text;
  try {
    await client.connections.list();
  } catch (err) {
    if (err instanceof SvcApiError && err.code === "connection_not_ready") void err.requestId;
    // @ts-expect-error codes are the server's, not any string
    if (err instanceof SvcApiError && err.code === "no_such_code") void err;
    if (err instanceof SvcConnectionError) void [err.timedOut, err.attempts];
  }
  void [me, sent, wrong, event];
}
`,
    );
    try {
      run(process.execPath, [tsc, "-p", "."], project);
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      expect.fail(`tsc failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
    }
  });

  it("type-checks a strict consumer without instantiating the contract (under 300 MB)", function () {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    // skipLibCheck off: the SDK's declarations are checked too, as in the slowest consumer setup.
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", lib: ["ES2022", "DOM"], strict: true, noEmit: true, skipLibCheck: false, types: [] },
        files: ["four-lines.ts", "env.d.ts"],
      }),
    );
    writeFileSync(
      join(project, "four-lines.ts"),
      `import { createClient, expectOk } from "@svc/sdk";
const svc = createClient({ baseUrl: "http://localhost:3000", apiKey: process.env.SVC_KEY });
const me = await expectOk(svc.workspace.whoami());
console.log(me.workspace.name, me.scopes);
`,
    );
    writeFileSync(join(project, "env.d.ts"), "declare const process: { env: Record<string, string | undefined> };\n");
    const out = run(process.execPath, [tsc, "-p", ".", "--extendedDiagnostics"], project);
    const figure = (label: string) => Number(new RegExp(`^${label}:\\s+(\\d+)`, "m").exec(out)?.[1]);
    // Before the generated declarations: ~495,000 types, ~1,560,000 instantiations, ~820 MB.
    expect(figure("Instantiations"), out).to.be.below(100_000);
    expect(figure("Memory used"), out).to.be.below(300_000);
  });
});
