// DATA_DIR on the embedded database, as `npm start` without DATABASE_URL runs it: one process
// holds the directory, the operator's CLI reaches the database through it, and its files are
// private whatever the umask the gateway was started with.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { DataDirInUseError, LOCK_FILE, lockDataDir } from "../server/db/data-dir-lock.js";
import { uniqueEmail } from "./support/actors.js";
import { cliEntry } from "./support/child-entry.js";
import { startChildGateway, type ChildGateway } from "./support/child-gateway.js";

const run = promisify(execFile);

/** The operator's CLI on DATA_DIR alone (no DATABASE_URL), as `npm run cli` runs it. */
async function cli(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...cliEntry(), ...args], { env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Signs in on `baseUrl`, reading the code from the development outbox in DATA_DIR. */
async function signIn(baseUrl: string, dataDir: string, email: string): Promise<number> {
  const outbox = join(dataDir, "outbox");
  const before = new Set(safeList(outbox));
  const requested = await fetch(`${baseUrl}/v1/auth/request-code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email }) });
  expect(requested.status).to.equal(202);
  let code: string | undefined;
  for (let i = 0; i < 100 && !code; i++) {
    for (const name of safeList(outbox).filter((n) => !before.has(n))) {
      const text = readFileSync(join(outbox, name), "utf8").replace(/=\r?\n/g, "");
      if (text.includes(email)) code = /sign-in code is (\d{6})/.exec(text)?.[1];
    }
    if (!code) await new Promise((r) => setTimeout(r, 100));
  }
  expect(code, "sign-in code in the outbox").to.be.a("string");
  const verified = await fetch(`${baseUrl}/v1/auth/verify`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, code }) });
  return verified.status;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Every path under `dir` with its permission bits. */
function modes(dir: string): { path: string; mode: number; directory: boolean }[] {
  const out: { path: string; mode: number; directory: boolean }[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push({ path, mode: statSync(path).mode & 0o777, directory: true }, ...modes(path));
    else if (entry.isFile()) out.push({ path, mode: statSync(path).mode & 0o777, directory: false });
  }
  return out;
}

describe("DATA_DIR on the embedded database", function () {
  this.timeout(120_000);
  // Not created here: the gateway creates it, under the child's umask.
  const base = mkdtempSync(join(tmpdir(), "svc-gateway-datadir-"));
  const dataDir = join(base, "data");
  const owner = uniqueEmail("cli-owner");
  let gateway: ChildGateway | undefined;
  // The embedded database, mail to the development outbox, and the loosest umask there is.
  const start = () => startChildGateway({ DATABASE_URL: undefined, SECRET_KEY: undefined, SMTP_URL: undefined, DATA_DIR: dataDir }, { umask: "000" });

  before(async () => {
    gateway = await start();
  });

  after(async () => {
    await gateway?.terminate();
    rmSync(base, { recursive: true, force: true });
  });

  it("lets the CLI create a workspace through the running gateway's database; its owner signs in at once", async () => {
    const created = await cli(dataDir, "workspace", "create", "--name", "B", "--owner", owner);
    expect(created.code, created.stderr).to.equal(0);
    expect(JSON.parse(created.stdout)).to.include({ name: "B", owner });
    expect(await signIn(gateway!.url, dataDir, owner)).to.equal(200);
    // Reached through the address the gateway published, as PostgreSQL's postmaster.pid.
    const lock = readFileSync(join(dataDir, LOCK_FILE), "utf8").split("\n");
    expect(lock[0]).to.equal(String(lockPid(gateway!)));
    expect(lock[1]).to.match(/^postgres:\/\//);
  });

  it("lets a second gateway on the same DATA_DIR use that database; stopping it leaves the holder's lock", async () => {
    const lock = readFileSync(join(dataDir, LOCK_FILE), "utf8");
    const second = await startChildGateway({ DATABASE_URL: undefined, SECRET_KEY: undefined, SMTP_URL: undefined, DATA_DIR: dataDir });
    try {
      expect(second.output()).to.include("using the embedded PostgreSQL of the process that holds DATA_DIR");
      expect(await signIn(second.url, dataDir, owner)).to.equal(200);
    } finally {
      expect(await second.terminate()).to.equal(0);
    }
    expect(readFileSync(join(dataDir, LOCK_FILE), "utf8")).to.equal(lock);
    expect(await signIn(gateway!.url, dataDir, owner)).to.equal(200);
  });

  it("keeps DATA_DIR 700, its files 600 and its directories 700 although started with umask 000", async () => {
    // A mail to the development outbox: the first workspace's owner (ADMIN_EMAIL's default) signs in.
    expect(await signIn(gateway!.url, dataDir, "admin@localhost")).to.equal(200);
    expect(statSync(dataDir).mode & 0o777).to.equal(0o700);
    const all = modes(dataDir);
    expect(all.filter((f) => f.path.includes(`${join(dataDir, "pgdata")}`)).length).to.be.above(900);
    expect(all.some((f) => f.path.endsWith(".eml"))).to.equal(true);
    expect(all.some((f) => f.path.endsWith("secret.key"))).to.equal(true);
    const open = all.filter((f) => f.mode !== (f.directory ? 0o700 : 0o600));
    expect(open.map((f) => `${f.mode.toString(8)} ${f.path}`)).to.deep.equal([]);
  });

  it("after a crash, takes over the stale lock on restart; the CLI's workspace is still there", async () => {
    const pid = lockPid(gateway!);
    await gateway!.kill();
    expect(readFileSync(join(dataDir, LOCK_FILE), "utf8").split("\n")[0]).to.equal(String(pid));
    gateway = await start();
    expect(readFileSync(join(dataDir, LOCK_FILE), "utf8").split("\n")[0]).to.equal(String(lockPid(gateway)));
    expect(await signIn(gateway.url, dataDir, owner)).to.equal(200);
  });

  it("removes its lock on a graceful stop", async () => {
    expect(await gateway!.terminate()).to.equal(0);
    gateway = undefined;
    expect(safeList(dataDir)).to.not.include(LOCK_FILE);
  });
});

describe("DATA_DIR held by a process that cannot be reached", function () {
  this.timeout(60_000);
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), "svc-gateway-held-"));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it("refuses with one line naming the holder, and leaves its lock alone", async () => {
    // A live process (this one) whose published address answers nothing.
    const lock = `${process.pid}\npostgres://postgres@localhost/postgres?host=${encodeURIComponent(join(dataDir, "nowhere"))}\n`;
    writeFileSync(join(dataDir, LOCK_FILE), lock);
    const refused = await cli(dataDir, "migrate");
    expect(refused.code).to.equal(1);
    expect(refused.stderr.trim().split("\n")).to.have.length(1);
    expect(refused.stderr).to.include(`held by process ${process.pid}`).and.include("does not answer").and.include(LOCK_FILE);
    expect(readFileSync(join(dataDir, LOCK_FILE), "utf8")).to.equal(lock);
    expect(safeList(dataDir)).to.not.include("pgdata");
  });

  it("takes over a lock whose process is gone", async () => {
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((r) => dead.once("exit", r));
    writeFileSync(join(dataDir, LOCK_FILE), `${dead.pid}\npostgres://postgres@127.0.0.1:1/postgres\n`);
    const migrated = await cli(dataDir, "migrate");
    expect(migrated.code, migrated.stderr).to.equal(0);
    expect(migrated.stdout).to.include("up to date");
    expect(safeList(dataDir)).to.include("pgdata").and.not.include(LOCK_FILE);
  });
});

describe("DATA_DIR lock while its holder starts", () => {
  let dataDir: string;
  let holder: ChildProcess;
  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "svc-gateway-starting-"));
    // A live process standing for a gateway that has taken DATA_DIR but does not listen yet.
    holder = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    await new Promise((r) => holder.once("spawn", r));
    writeFileSync(join(dataDir, LOCK_FILE), `${holder.pid}\n`);
  });
  afterEach(() => {
    holder.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("waits for the holder's address", async () => {
    const url = "postgres://postgres@127.0.0.1:1/postgres";
    setTimeout(() => writeFileSync(join(dataDir, LOCK_FILE), `${holder.pid}\n${url}\n`), 400);
    const outcome = await lockDataDir(dataDir, 5000);
    expect(outcome).to.deep.include({ held: false, pid: holder.pid, url });
  });

  it("gives up after the wait with one line naming the holder", async () => {
    const started = Date.now();
    const err = await lockDataDir(dataDir, 500).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(DataDirInUseError);
    expect((err as Error).message).to.include(`held by process ${holder.pid}`).and.not.include("\n");
    expect(Date.now() - started).to.be.within(500, 3000);
  });

  it("takes it at once when the holder dies while starting", async () => {
    holder.kill("SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    const outcome = await lockDataDir(dataDir, 5000);
    expect(outcome.held).to.equal(true);
    if (outcome.held) {
      expect(readFileSync(join(dataDir, LOCK_FILE), "utf8")).to.equal(`${process.pid}\n`);
      outcome.lock.release();
    }
    expect(safeList(dataDir)).to.not.include(LOCK_FILE);
  });
});

/** The gateway's pid: the child itself, or under `sh -c 'exec …'` the same pid. */
function lockPid(g: ChildGateway): number {
  return g.process.pid!;
}
