// Production never writes sign-in codes and invitation links to the log unless told to by name:
// without SMTP_URL it refuses to start, and MAIL_TRANSPORT=log says what it does at every start.
import { expect } from "chai";
import { loadConfig, ConfigError } from "../server/config.js";
import { testEnv } from "./setup.js";
import { childEnv, freePort, spawnMain, startChildGateway } from "./support/child-gateway.js";

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
});
