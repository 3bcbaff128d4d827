import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { emailOfLength, fromDashboard, http, newWorkspace, sdk, signIn, uniqueEmail } from "./support/actors.js";

async function inviteAndReadToken(cookie: string, email: string, role: string) {
  const { mailbox } = testEnv();
  const since = mailbox.mails.length;
  const res = await http("POST", "/v1/members/invitations", { body: { email, role }, headers: { cookie } });
  if (res.status !== 201) return { res, token: undefined };
  const [, token] = await mailbox.waitFor(email, /token=([A-Za-z0-9_-]+)/, since);
  return { res, token: token! };
}

describe("members and invitations", () => {
  it("invites by single-use e-mailed link bound to the address; the token never appears in a response", async () => {
    const ws = await newWorkspace();
    const email = uniqueEmail("invitee");
    const { res, token } = await inviteAndReadToken(ws.owner.cookie, email, "developer");
    expect(res.status).to.equal(201);
    expect(res.text).to.not.include(token);
    expect(res.json).to.include({ email, role: "developer" });
    const list = await http("GET", "/v1/members", { headers: { cookie: ws.owner.cookie } });
    expect(list.text).to.not.include(token);
    expect(list.json.invitations).to.have.length(1);

    // holding the token is not enough: not signed in → 401; signed in as someone else → 403
    expect((await http("POST", "/v1/members/accept", { body: { token } })).status).to.equal(401);
    const other = await newWorkspace();
    const wrong = await http("POST", "/v1/members/accept", { body: { token }, headers: { cookie: other.owner.cookie } });
    expect(wrong.status).to.equal(403);

    const cookie = await signIn(email);
    const accepted = await expectOk(sdk({ cookie }).team.accept({ body: { token: token! } }));
    expect(accepted).to.deep.include({ role: "developer" });
    expect(accepted.workspace.id).to.equal(ws.id);
    // single use
    expect((await http("POST", "/v1/members/accept", { body: { token }, headers: { cookie } })).status).to.equal(404);
    const members = await expectOk(ws.owner.client.team.list());
    expect(members.members.map((m) => m.email)).to.include(email);
    expect(members.invitations).to.have.length(0);
  });

  it("validates invitation and acceptance bodies at their limits", async () => {
    const ws = await newWorkspace();
    const at254 = emailOfLength(254);
    const at255 = emailOfLength(255);
    const invite = (body: unknown) => http("POST", "/v1/members/invitations", { body, headers: { cookie: ws.owner.cookie } });
    expect((await invite({ email: at254, role: "viewer" })).status).to.equal(201);
    expect((await invite({ email: at255, role: "viewer" })).status).to.equal(400);
    expect((await invite({ email: "not-an-email", role: "viewer" })).status).to.equal(400);
    expect((await invite({ email: uniqueEmail(), role: "superuser" })).status).to.equal(400);
    const accept = (token: string) => http("POST", "/v1/members/accept", { body: { token }, headers: { cookie: ws.owner.cookie } });
    expect((await accept("x".repeat(19))).status).to.equal(400);
    expect((await accept("x".repeat(20))).status).to.equal(404);
    expect((await accept("x".repeat(200))).status).to.equal(404);
    expect((await accept("x".repeat(201))).status).to.equal(400);
  });

  it("refuses an expired or withdrawn invitation with 404", async () => {
    const ws = await newWorkspace();
    const email = uniqueEmail();
    const { res, token } = await inviteAndReadToken(ws.owner.cookie, email, "viewer");
    const cookie = await signIn(email);
    await testEnv().gateway.ctx.db.query(`UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, [res.json.id]);
    expect((await http("POST", "/v1/members/accept", { body: { token }, headers: { cookie } })).status).to.equal(404);

    const second = await inviteAndReadToken(ws.owner.cookie, email, "viewer");
    expect((await ws.owner.client.team.cancelInvitation({ params: { id: second.res.json.id as string } })).status).to.equal(204);
    expect((await http("POST", "/v1/members/accept", { body: { token: second.token }, headers: { cookie } })).status).to.equal(404);
    expect((await ws.owner.client.team.cancelInvitation({ params: { id: second.res.json.id as string } })).status).to.equal(404);
  });

  it("answers 409 when the address is already a member", async () => {
    const ws = await newWorkspace();
    const res = await http("POST", "/v1/members/invitations", { body: { email: ws.owner.email, role: "viewer" }, headers: { cookie: ws.owner.cookie } });
    expect(res.status).to.equal(409);
    expect(res.json.code).to.equal("already_member");
  });

  it("lets nobody invite or assign above their own role; developers, viewers and billing manage no one", async () => {
    const ws = await newWorkspace();
    const admin = await ws.addMember("admin");
    expect((await inviteAndReadToken(admin.cookie, uniqueEmail(), "owner")).res.status).to.equal(403);
    expect((await inviteAndReadToken(admin.cookie, uniqueEmail(), "admin")).res.status).to.equal(201);
    const list = await expectOk(admin.client.team.list());
    expect(list.assignable_roles).to.have.members(["admin", "developer", "viewer", "billing"]);
    for (const role of ["developer", "viewer", "billing"] as const) {
      const m = await ws.addMember(role);
      expect((await inviteAndReadToken(m.cookie, uniqueEmail(), "viewer")).res.status, role).to.equal(403);
      expect((await expectOk(m.client.team.list())).assignable_roles, role).to.deep.equal([]);
    }
    const ownerList = await expectOk(ws.owner.client.team.list());
    expect(ownerList.assignable_roles).to.have.members(["owner", "admin", "developer", "viewer", "billing"]);
    const ownerId = ownerList.members.find((m) => m.email === ws.owner.email)!.id;
    expect((await admin.client.team.update({ params: { id: ownerId }, body: { role: "viewer" } })).status).to.equal(403);
    expect((await admin.client.team.remove({ params: { id: ownerId } })).status).to.equal(403);
  });

  it("always keeps an owner: the last owner cannot be demoted or removed, a second owner makes it possible", async () => {
    const ws = await newWorkspace();
    const list = await expectOk(ws.owner.client.team.list());
    const ownerId = list.members[0]!.id;
    const demote = await http("PATCH", `/v1/members/${ownerId}`, { body: { role: "admin" }, headers: { cookie: ws.owner.cookie } });
    expect(demote.status).to.equal(409);
    expect(demote.json.code).to.equal("owner_required");
    expect((await http("DELETE", `/v1/members/${ownerId}`, { headers: fromDashboard(ws.owner.cookie) })).status).to.equal(409);

    const second = await ws.addMember("owner");
    const demoted = await expectOk(ws.owner.client.team.update({ params: { id: ownerId }, body: { role: "admin" } }));
    expect(demoted.role).to.equal("admin");
    const secondId = (await expectOk(second.client.team.list())).members.find((m) => m.email === second.email)!.id;
    expect((await second.client.team.update({ params: { id: secondId }, body: { role: "admin" } })).status).to.equal(409);
  });

  it("serialises concurrent demotions so one owner always remains", async () => {
    const ws = await newWorkspace();
    const second = await ws.addMember("owner");
    const members = (await expectOk(ws.owner.client.team.list())).members;
    const [a, b] = members.filter((m) => m.role === "owner");
    const results = await Promise.all([
      ws.owner.client.team.update({ params: { id: a!.id }, body: { role: "admin" } }),
      second.client.team.update({ params: { id: b!.id }, body: { role: "admin" } }),
    ]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([200, 409]);
    const owners: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM members WHERE workspace_id = $1 AND role = 'owner'`, [ws.id]);
    expect(owners).to.have.length(1);
  });

  it("gates invitations by plan with a 402 naming the feature and the plan that has it", async () => {
    const ws = await newWorkspace("free");
    const res = await http("POST", "/v1/members/invitations", { body: { email: uniqueEmail(), role: "viewer" }, headers: { cookie: ws.owner.cookie } });
    expect(res.status).to.equal(402);
    expect(res.json).to.include({ code: "plan_required", feature: "member_management", required_plan: "pro" });
    expect(res.json.detail).to.include("member management").and.include("Pro");
  });
});
