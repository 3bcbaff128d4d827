import { expect } from "chai";
import { testEnv } from "./setup.js";
import { sdk, signIn, uniqueEmail } from "./support/actors.js";
import { cli } from "./support/cli.js";

describe("operator CLI", function () {
  // Up to nine commands a test, each a process of its own: on the loaded embedded database of a
  // CI run (every pass side by side) one test took over 60 s.
  this.timeout(120_000);

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

  it("adds a person to an existing workspace with a role, once, and lists workspaces with their owners", async () => {
    const owner = uniqueEmail("cli-owner");
    const ws = JSON.parse((await cli("workspace", "create", "--name", "Locked out", "--owner", owner)).stdout) as { id: string };
    const admin = uniqueEmail("cli-admin");
    const added = await cli("member", "add", ws.id, "--email", admin.toUpperCase(), "--role", "admin");
    expect(added.code, added.stderr).to.equal(0);
    expect(JSON.parse(added.stdout)).to.include({ workspace_id: ws.id, email: admin, role: "admin" });
    // The new member signs in as anyone does, with a mailed code, into that workspace.
    const cookie = await signIn(admin);
    const me = await sdk({ cookie }).auth.session();
    expect(me.status).to.equal(200);
    expect(JSON.stringify(me.body)).to.include(ws.id).and.include('"admin"');
    const twice = await cli("member", "add", ws.id, "--email", admin, "--role", "owner");
    expect(twice.code).to.equal(1);
    expect(twice.stderr).to.include("already a member").and.include("admin");
    expect((await cli("member", "add", ws.id, "--email", uniqueEmail("x"), "--role", "superuser")).code).to.equal(64);
    expect((await cli("member", "add", ws.id, "--email", "not-an-address", "--role", "viewer")).code).to.equal(64);
    expect((await cli("member", "add", ws.id, "--email", uniqueEmail("x"))).code).to.equal(64);
    const unknown = await cli("member", "add", "wsp_nope", "--email", uniqueEmail("x"), "--role", "viewer");
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.include("No such workspace");
    const listed = (await cli("workspace", "list")).stdout.trim().split("\n").map((l) => JSON.parse(l) as { id: string; owners: string[] });
    expect(listed.find((w) => w.id === ws.id)?.owners).to.deep.equal([owner]);
  });

  it("changes an owner's address: the new one signs in as that owner, the old one's sessions end", async () => {
    const before = uniqueEmail("cli-old");
    const ws = JSON.parse((await cli("workspace", "create", "--name", "Renamed", "--owner", before)).stdout) as { id: string };
    const oldCookie = await signIn(before);
    expect((await sdk({ cookie: oldCookie }).auth.session()).status).to.equal(200);
    const after = uniqueEmail("cli-new");
    const changed = await cli("user", "set-email", before, after);
    expect(changed.code, changed.stderr).to.equal(0);
    expect(JSON.parse(changed.stdout)).to.include({ email: after, workspaces: 1 });
    expect((await sdk({ cookie: oldCookie }).auth.session()).status).to.equal(401);
    const cookie = await signIn(after);
    const me = await sdk({ cookie }).auth.session();
    expect(JSON.stringify(me.body)).to.include(ws.id).and.include('"owner"');
    // Another person's address, an unknown one, and no change at all are refused; nothing moves.
    const taken = await cli("user", "set-email", after, await existingAddress());
    expect(taken.code).to.equal(1);
    expect(taken.stderr).to.include("already signs in as another user");
    expect((await cli("user", "set-email", uniqueEmail("nobody"), uniqueEmail("x"))).code).to.equal(1);
    expect((await cli("user", "set-email", after, after)).code).to.equal(1);
    expect((await cli("user", "set-email", after, "nope")).code).to.equal(64);
    expect((await sdk({ cookie }).auth.session()).status).to.equal(200);
  });
});

/** The address of a person who already exists (a workspace owner made for the purpose). */
async function existingAddress(): Promise<string> {
  const email = uniqueEmail("cli-other");
  await cli("workspace", "create", "--name", "Other", "--owner", email);
  return email;
}

