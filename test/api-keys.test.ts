import { createHash } from "node:crypto";
import { expect } from "chai";
import { ISSUABLE_SCOPES } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, sdk } from "./support/actors.js";

const KEY = /^svc_(live|test)_[0-9A-Za-z]{38}$/;

describe("API keys", () => {
  it("issues a live key once, stores only its SHA-256 digest and lists prefixes without keys", async () => {
    const ws = await newWorkspace();
    const issued = await ws.owner.client.workspace.createApiKey({ body: { name: "deploy", scopes: ["messages:read", "messages:write"] } });
    expect(issued.status).to.equal(201);
    if (issued.status !== 201) return;
    expect(issued.body.key).to.match(KEY).and.match(/^svc_live_/);
    expect(issued.body.environment).to.equal("live");
    expect(issued.body.key.startsWith(issued.body.prefix)).to.equal(true);

    const rows: { digest: Buffer }[] = await testEnv().gateway.ctx.db.query(`SELECT digest FROM api_keys WHERE id = $1`, [issued.body.id]);
    expect(rows[0]!.digest.equals(createHash("sha256").update(issued.body.key).digest())).to.equal(true);

    const list = await http("GET", "/v1/api-keys", { headers: { cookie: ws.owner.cookie } });
    expect(list.status).to.equal(200);
    expect(list.text).to.not.include(issued.body.key);
    expect(list.json.data).to.have.length(1);
    expect((list.json.data as Record<string, unknown>[])[0]).to.include({ id: issued.body.id, prefix: issued.body.prefix, last_used_at: null });
    expect((list.json.data as Record<string, unknown>[])[0]).to.not.have.property("key");
  });

  it("issues test keys distinguishable by prefix", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read"], ws.owner, "test");
    expect(key).to.match(/^svc_test_/);
    const me = await expectOk(sdk({ apiKey: key }).workspace.whoami());
    expect(me.principal.environment).to.equal("test");
  });

  it("validates the issue request at its limits", async () => {
    const ws = await newWorkspace();
    const issue = (body: unknown) => http("POST", "/v1/api-keys", { body, headers: { cookie: ws.owner.cookie } });
    expect((await issue({ name: "x".repeat(80), scopes: ["messages:read"] })).status).to.equal(201);
    expect((await issue({ name: "x".repeat(81), scopes: ["messages:read"] })).status).to.equal(400);
    expect((await issue({ name: "", scopes: ["messages:read"] })).status).to.equal(400);
    expect((await issue({ name: "k", scopes: [] })).status).to.equal(400);
    expect((await issue({ name: "k", scopes: ["messages:*"] })).status).to.equal(400);
    expect((await issue({ name: "k", scopes: ["usage:read"] })).status).to.equal(400);
    expect((await issue({ name: "k", scopes: ["messages:read"], environment: "staging" })).status).to.equal(400);
    const extra = await issue({ name: "k", scopes: ["messages:read"], workspace: "wsp_other" });
    expect(extra.status).to.equal(400);
    expect(extra.json.errors).to.be.an("array").that.is.not.empty;
    expect((await issue({ name: "k", scopes: [...ISSUABLE_SCOPES] })).status).to.equal(201);
  });

  it("cannot be managed with an API key, only with a session", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key([...ISSUABLE_SCOPES]);
    const auth = { authorization: `Bearer ${key}` };
    expect((await http("POST", "/v1/api-keys", { body: { name: "k", scopes: ["messages:read"] }, headers: auth })).status).to.equal(401);
    expect((await http("GET", "/v1/api-keys", { headers: auth })).status).to.equal(401);
  });

  it("refuses absent, malformed, mistyped and unknown keys with 401", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read"]);
    const last = key.at(-1) === "A" ? "B" : "A";
    for (const authorization of [undefined, "Basic abc", "Bearer", `Bearer ${key.slice(0, -1)}${last}`, `Bearer svc_live_${"A".repeat(38)}`, `Token ${key}`]) {
      const res = await http("GET", "/v1/whoami", { headers: authorization ? { authorization } : {} });
      expect(res.status, authorization).to.equal(401);
      expect(res.json.code).to.equal("unauthorized");
    }
  });

  it("records last_used_at when a key is used", async () => {
    const ws = await newWorkspace();
    const { id, client } = await ws.key(["messages:read"]);
    await expectOk(client.workspace.whoami());
    const list = await expectOk(ws.owner.client.workspace.listApiKeys());
    const used = list.data.find((k) => k.id === id)!;
    expect(used.last_used_at).to.be.a("string");
    expect(Date.now() - Date.parse(used.last_used_at!)).to.be.lessThan(60_000);
  });

  it("revokes immediately; rotate issues a working key and revokes the old one", async () => {
    const ws = await newWorkspace();
    const a = await ws.key(["messages:read"]);
    await expectOk(a.client.workspace.whoami());
    const revoked = await expectOk(ws.owner.client.workspace.revokeApiKey({ params: { id: a.id } }));
    expect(revoked.revoked_at).to.be.a("string");
    expect((await a.client.workspace.whoami()).status).to.equal(401);

    const b = await ws.key(["messages:read", "connections:read"]);
    const rotated = await expectOk(ws.owner.client.workspace.rotateApiKey({ params: { id: b.id } }));
    expect(rotated.key).to.match(KEY);
    expect(rotated.id).to.not.equal(b.id);
    expect(rotated.scopes).to.have.members(["messages:read", "connections:read"]);
    expect((await b.client.workspace.whoami()).status).to.equal(401);
    expect((await sdk({ apiKey: rotated.key }).workspace.whoami()).status).to.equal(200);
    // the revoked key cannot be rotated back to life
    expect((await ws.owner.client.workspace.rotateApiKey({ params: { id: b.id } })).status).to.equal(404);
    expect((await ws.owner.client.workspace.revokeApiKey({ params: { id: "key_unknown" } })).status).to.equal(404);
  });

  it("checks exactly the scope each route declares: none implied, no wildcard", async () => {
    const ws = await newWorkspace();
    const writer = await ws.key(["messages:write"]);
    const reader = await ws.key(["messages:read"]);
    const denied = await http("GET", "/v1/messages", { headers: { authorization: `Bearer ${writer.key}` } });
    expect(denied.status).to.equal(403);
    expect(denied.json).to.include({ code: "insufficient_scope", required_scope: "messages:read" });
    expect((await http("GET", "/v1/connections", { headers: { authorization: `Bearer ${reader.key}` } })).status).to.equal(403);
    // whoami needs a key, any scope
    expect((await reader.client.workspace.whoami()).status).to.equal(200);
  });

  it("caps what a role may grant: developers cannot grant ai:write, viewers and billing cannot issue or list", async () => {
    const ws = await newWorkspace();
    const developer = await ws.addMember("developer");
    const denied = await http("POST", "/v1/api-keys", { body: { name: "k", scopes: ["ai:write", "messages:read"] }, headers: { cookie: developer.cookie } });
    expect(denied.status).to.equal(403);
    expect(denied.json.denied_scopes).to.deep.equal(["ai:write"]);
    const allowed = ISSUABLE_SCOPES.filter((s) => s !== "ai:write");
    expect((await developer.client.workspace.createApiKey({ body: { name: "k", scopes: allowed } })).status).to.equal(201);
    for (const role of ["viewer", "billing"] as const) {
      const m = await ws.addMember(role);
      expect((await m.client.workspace.createApiKey({ body: { name: "k", scopes: ["messages:read"] } })).status, role).to.equal(403);
      expect((await m.client.workspace.listApiKeys()).status, role).to.equal(403);
    }
  });

  it("caps a key by its issuer's current role, and a removed member's keys stop at once", async () => {
    const ws = await newWorkspace();
    const admin = await ws.addMember("admin");
    const key = await ws.key(["ai:write", "messages:read"], admin);
    expect((await expectOk(key.client.workspace.whoami())).scopes).to.have.members(["ai:write", "messages:read"]);
    const members = await expectOk(ws.owner.client.team.list());
    const adminId = members.members.find((m) => m.email === admin.email)!.id;
    await expectOk(ws.owner.client.team.update({ params: { id: adminId }, body: { role: "developer" } }));
    expect((await expectOk(key.client.workspace.whoami())).scopes).to.deep.equal(["messages:read"]);
    const ai = await http("POST", "/v1/ai/credentials", {
      body: { provider: "vendortwo", label: "l", api_key: "12345678" },
      headers: { authorization: `Bearer ${key.key}` },
    });
    expect(ai.status).to.equal(403);
    expect((await ws.owner.client.team.remove({ params: { id: adminId } })).status).to.equal(204);
    expect((await key.client.workspace.whoami()).status).to.equal(401);
  });

  it("answers whoami with the principal, its effective scopes and its workspace", async () => {
    const ws = await newWorkspace();
    const { id, client, key } = await ws.key(["connections:read", "schedules:read"]);
    const me = await expectOk(client.workspace.whoami());
    expect(me.principal).to.deep.include({ type: "api_key", id, environment: "live" });
    expect(key.startsWith(me.principal.prefix)).to.equal(true);
    expect(me.scopes).to.have.members(["connections:read", "schedules:read"]);
    expect(me.workspace).to.deep.include({ id: ws.id, plan: "pro" });
  });
});
