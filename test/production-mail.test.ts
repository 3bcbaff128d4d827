// Production never writes sign-in codes and invitation links to the log unless told to by name:
// without SMTP_URL it refuses to start, and MAIL_TRANSPORT=log says what it does at every start.
// A mail server that cannot be reached is said at start in one line; a mail that fails is retried,
// counted in /metrics, and reported by /readyz and `svc-gateway health` until one goes out.
import { expect } from "chai";
import { loadConfig, ConfigError } from "../server/config.js";
import { testEnv } from "./setup.js";
import { childEnv, spawnMain, startChildGateway } from "./support/child-gateway.js";
import { freePort } from "./support/ports.js";
import { Mailbox } from "./support/mailbox.js";
import { newWorkspace } from "./support/actors.js";
import { waitFor } from "./support/wait.js";
import { cliWith } from "./support/cli.js";

const WARNING = "MAIL_TRANSPORT=log in production";

/** What NODE_ENV=production needs besides mail (the test run's database and key). */
function production(env: Record<string, string | undefined>): Record<string, string | undefined> {
  // A production gateway refuses the test stand-in for the Baileys socket (config.ts), which childEnv sets.
  return { NODE_ENV: "production", BASE_URL: "https://gateway.example.test", SMTP_URL: undefined, ...env };
}

/** Warnings (pino level 40) whose message mentions `text`. */
function warnings(output: string, text: string): number {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((entry) => entry.level === 40 && entry.msg.includes(text)).length;
}

describe("mail in production", function () {
  this.timeout(120_000);

  it("refuses to start without SMTP_URL, saying how to accept the log instead", async () => {
    const child = spawnMain(childEnv({ ...production({}), PORT: String(await freePort()) }));
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    // A gateway that starts instead of refusing is stopped, not left running.
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    clearTimeout(timer);
    expect(code, out).to.equal(2);
    expect(out).to.include("NODE_ENV=production requires SMTP_URL").and.include("MAIL_TRANSPORT=log");
  });

  it("starts with MAIL_TRANSPORT=log and warns in the log at every start", async () => {
    for (let start = 1; start <= 2; start++) {
      const gateway = await startChildGateway(production({ MAIL_TRANSPORT: "log" }));
      try {
        expect(warnings(gateway.output(), WARNING), `start ${start}:\n${gateway.output()}`).to.equal(1);
      } finally {
        expect(await gateway.terminate()).to.equal(0);
      }
    }
  });

  it("says nothing of the kind with SMTP_URL", async () => {
    const gateway = await startChildGateway(production({ SMTP_URL: testEnv().gateway.ctx.config.smtpUrl }));
    try {
      expect(warnings(gateway.output(), "MAIL_TRANSPORT")).to.equal(0);
    } finally {
      await gateway.terminate();
    }
  });

  it("parses MAIL_TRANSPORT: smtp needs SMTP_URL; log wins over SMTP_URL; nothing else is accepted", () => {
    const dev = { NODE_ENV: "development", DATA_DIR: testEnv().dataDir };
    expect(() => loadConfig({ ...dev, MAIL_TRANSPORT: "smtp" })).to.throw(ConfigError, "MAIL_TRANSPORT=smtp requires SMTP_URL");
    expect(loadConfig({ ...dev, MAIL_TRANSPORT: "smtp", SMTP_URL: "smtp://mail.example.test" }).smtpUrl).to.equal("smtp://mail.example.test");
    expect(loadConfig({ ...dev, MAIL_TRANSPORT: "log", SMTP_URL: "smtp://mail.example.test" }).smtpUrl).to.equal(undefined);
    expect(loadConfig({ ...dev, SMTP_URL: "smtp://mail.example.test" }).smtpUrl).to.equal("smtp://mail.example.test");
    expect(loadConfig(dev).smtpUrl).to.equal(undefined);
    expect(() => loadConfig({ ...dev, MAIL_TRANSPORT: "file" })).to.throw(ConfigError, "MAIL_TRANSPORT");
  });

  describe("when the mail server fails", () => {
    const METRICS_TOKEN = "metrics-token-for-mail-tests";

    async function metric(url: string, line: RegExp): Promise<number> {
      const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      const found = text.split("\n").find((l) => line.test(l));
      return found ? Number(found.split(" ").pop()) : 0;
    }

    it("says so in one line at start, and /readyz and `svc-gateway health` report mail failing while ready", async () => {
      const port = await freePort();
      const gateway = await startChildGateway({ SMTP_URL: `smtp://user:hunter2@127.0.0.1:${port}` });
      try {
        const line = await waitFor(async () => gateway.output().split("\n").filter((l) => l.includes("SMTP_URL unreachable")), (l) => l.length > 0, 20_000);
        expect(line).to.have.length(1);
        expect(line[0]).to.include(`127.0.0.1:${port}`).and.include("ECONNREFUSED").and.not.include("hunter2");
        const ready = await fetch(`${gateway.url}/readyz`);
        expect(ready.status).to.equal(200);
        const body = (await ready.json()) as { status: string; warnings?: string[] };
        expect(body.status).to.equal("ready");
        expect(body.warnings?.[0]).to.match(/^mail: failing since /);
        const health = await cliWith({ BASE_URL: gateway.url }, "health");
        expect(health.code, health.stderr).to.equal(0);
        expect(health.stdout).to.include("200").and.match(/^warning: mail: failing since/m);
      } finally {
        await gateway.terminate();
      }
    });

    it("retries a sign-in mail that failed, counts it, and clears the warning once one goes out", async () => {
      const port = await freePort();
      const gateway = await startChildGateway({ SMTP_URL: `smtp://127.0.0.1:${port}`, METRICS_TOKEN });
      const mailbox = new Mailbox();
      try {
        const ws = await newWorkspace();
        const asked = await fetch(`${gateway.url}/v1/auth/request-code`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: ws.owner.email }),
        });
        expect(asked.status).to.equal(202);
        await waitFor(() => metric(gateway.url, /^svc_mail_failures_total\{kind="sign_in",outcome="retrying"\}/), (n) => n >= 1, 20_000);
        expect(await metric(gateway.url, /^svc_mail_sent_total\{kind="sign_in"\}/)).to.equal(0);
        // The mail server comes up: the next attempt delivers the code, once.
        await mailbox.start(port);
        await mailbox.waitFor(ws.owner.email, /sign-in code is (\d{6})/, 0, 30_000);
        await waitFor(() => metric(gateway.url, /^svc_mail_sent_total\{kind="sign_in"\}/), (n) => n === 1, 10_000);
        expect(mailbox.count(ws.owner.email)).to.equal(1);
        expect(await metric(gateway.url, /^svc_mail_failures_total\{kind="sign_in",outcome="given_up"\}/)).to.equal(0);
        const ready = (await (await fetch(`${gateway.url}/readyz`)).json()) as { warnings?: string[] };
        expect(ready.warnings).to.equal(undefined);
        expect(gateway.output()).to.include("sign_in mail failed; trying again in 2 s");
      } finally {
        await gateway.terminate();
        await mailbox.stop();
      }
    });
  });
});
