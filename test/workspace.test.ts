import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";

describe("workspace and usage", () => {
  it("shows the workspace, the caller's role and the plan with usage against it", async () => {
    const ws = await newWorkspace();
    const overview = await expectOk(ws.owner.client.workspace.get());
    expect(overview.workspace.id).to.equal(ws.id);
    expect(overview.role).to.equal("owner");
    expect(overview.plan).to.deep.include({ id: "pro" });
    expect(overview.plan.limits).to.deep.include({ connections: 10, messages_per_month: 100000 });
    expect(overview.plan.limits.features).to.deep.equal({ scheduling: true, connection_webhooks: true, ai: true, mcp: true, member_management: true });
    expect(overview.usage).to.deep.equal({ connections: 0, messages_this_month: 0 });
    const viewer = await ws.addMember("viewer");
    expect((await expectOk(viewer.client.workspace.get())).role).to.equal("viewer");
  });

  it("reports the plans as seeded rows", async () => {
    const rows: { id: string; max_connections: number | null; messages_per_month: number | null; scheduling: boolean }[] =
      await testEnv().gateway.ctx.db.query(`SELECT id, max_connections, messages_per_month, scheduling FROM plans ORDER BY rank`);
    expect(rows).to.deep.equal([
      { id: "free", max_connections: 1, messages_per_month: 1000, scheduling: false },
      { id: "pro", max_connections: 10, messages_per_month: 100000, scheduling: true },
      { id: "enterprise", max_connections: null, messages_per_month: null, scheduling: true },
    ]);
  });

  it("aggregates usage by day over 1 to 365 days", async () => {
    const ws = await newWorkspace();
    await testEnv().gateway.ctx.db.query(
      `INSERT INTO usage_daily (workspace_id, day, messages_outbound, messages_inbound)
       VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 7, 2), ($1, (now() AT TIME ZONE 'UTC')::date - 3, 5, 1),
              ($1, (now() AT TIME ZONE 'UTC')::date - 400, 100, 100)`,
      [ws.id],
    );
    const one = await expectOk(ws.owner.client.workspace.usage({ query: { days: 1 } }));
    expect(one.daily).to.have.length(1);
    expect(one.totals).to.deep.equal({ messages_outbound: 7, messages_inbound: 2 });
    const year = await expectOk(ws.owner.client.workspace.usage({ query: { days: 365 } }));
    expect(year.daily).to.have.length(365);
    expect(year.totals).to.deep.equal({ messages_outbound: 12, messages_inbound: 3 });
    const def = await expectOk(ws.owner.client.workspace.usage({ query: {} }));
    expect(def.days).to.equal(30);
    for (const days of ["0", "366", "1.5", "x"]) {
      expect((await http("GET", `/v1/usage?days=${days}`, { headers: { cookie: ws.owner.cookie } })).status, days).to.equal(400);
    }
    expect((await expectOk(ws.owner.client.workspace.get())).usage.messages_this_month).to.be.at.least(7);
  });

  it("requires a session for workspace and usage", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read"]);
    expect((await http("GET", "/v1/workspace", { headers: { authorization: `Bearer ${key}` } })).status).to.equal(401);
    expect((await http("GET", "/v1/usage")).status).to.equal(401);
  });
});

describe("tenancy", () => {
  it("answers 404 for another workspace's keys, members and invitations", async () => {
    const a = await newWorkspace();
    const b = await newWorkspace();
    const bKey = await b.key(["messages:read"]);
    expect((await a.owner.client.workspace.revokeApiKey({ params: { id: bKey.id } })).status).to.equal(404);
    expect((await a.owner.client.workspace.rotateApiKey({ params: { id: bKey.id } })).status).to.equal(404);
    expect((await expectOk(b.key(["messages:read"]).then((k) => k.client.workspace.whoami()))).workspace.id).to.equal(b.id);

    const bMembers = await expectOk(b.owner.client.team.list());
    const bOwnerId = bMembers.members[0]!.id;
    expect((await a.owner.client.team.update({ params: { id: bOwnerId }, body: { role: "viewer" } })).status).to.equal(404);
    expect((await a.owner.client.team.remove({ params: { id: bOwnerId } })).status).to.equal(404);
    const inv = await expectOk(b.owner.client.team.invite({ body: { email: "someone@example.test", role: "viewer" } }));
    expect((await a.owner.client.team.cancelInvitation({ params: { id: inv.id } })).status).to.equal(404);
    // b's key still works: a's attempts changed nothing
    expect((await bKey.client.workspace.whoami()).status).to.equal(200);
  });

  it("takes the workspace from the credential, never from the body", async () => {
    const a = await newWorkspace();
    const b = await newWorkspace();
    const res = await http("POST", "/v1/api-keys", { body: { name: "k", scopes: ["messages:read"], workspace_id: b.id }, headers: { cookie: a.owner.cookie } });
    expect(res.status).to.equal(400);
    const keys: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM api_keys WHERE workspace_id = $1`, [b.id]);
    expect(keys).to.have.length(0);
  });
});
