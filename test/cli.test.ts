import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "chai";
import { testEnv } from "./setup.js";
import { uniqueEmail } from "./support/actors.js";

const run = promisify(execFile);

/** The operator's CLI, as `npx svc-gateway` runs it, on the test run's database. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? "", DATABASE_URL: testEnv().databaseUrl, DATA_DIR: testEnv().dataDir, BASE_URL: testEnv().baseUrl };
  try {
    const { stdout, stderr } = await run(process.execPath, ["bin/svc-gateway.js", ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("operator CLI", function () {
  this.timeout(60_000);

  it("creates a workspace owned by an address, on the plan asked for, and moves it to another plan", async () => {
    const owner = uniqueEmail("cli");
    const created = await cli("workspace", "create", "--name", "Acme", "--owner", owner, "--plan", "free");
    expect(created.code, created.stderr).to.equal(0);
    const ws = JSON.parse(created.stdout) as { id: string; plan: string };
    expect(ws.plan).to.equal("free");
    const [member] = (await testEnv().gateway.ctx.db.query(
      `SELECT m.role FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND u.email = $2`,
      [ws.id, owner],
    )) as { role: string }[];
    expect(member?.role).to.equal("owner");
    expect((await cli("workspace", "set-plan", ws.id, "enterprise")).code).to.equal(0);
    const [row] = (await testEnv().gateway.ctx.db.query(`SELECT plan_id FROM workspaces WHERE id = $1`, [ws.id])) as { plan_id: string }[];
    expect(row?.plan_id).to.equal("enterprise");
    expect((await cli("workspace", "set-plan", ws.id, "platinum")).code).to.not.equal(0);
  });

  it("lists plans, reports health, and refuses unknown commands with usage", async () => {
    const plans = await cli("plans", "list");
    expect(plans.stdout).to.include("free").and.include("pro").and.include("enterprise");
    const health = await cli("health");
    expect(health.code).to.equal(0);
    expect(health.stdout).to.include("200");
    expect((await cli("migrate")).stdout).to.include("up to date");
    const unknown = await cli("frobnicate");
    expect(unknown.code).to.equal(64);
    expect(unknown.stderr).to.include("Usage:");
    expect((await cli("workspace", "create", "--name", "x")).code).to.equal(64);
  });
});
