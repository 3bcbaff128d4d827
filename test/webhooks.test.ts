// Webhook endpoints over HTTP (docs/webhooks.md): every field rule at its limits, the refused
// URLs, the one-time encrypted secret, connection scoping (402 / 404), who may manage endpoints
// (keys by scope, sessions by role), tenancy and the audit log. Deliveries are in
// webhook-delivery.test.ts. The test gateway allows 127.0.0.0/8 (OUTBOUND_ALLOW_PRIVATE), so
// http://127.0.0.1 URLs register; nothing in this file makes an event, so nothing is delivered.
import { expect } from "chai";
import type { DataSource } from "typeorm";
import { WEBHOOK_EVENTS, type CreateWebhookEndpointBody } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { ApiError } from "../server/http/errors.js";
import type { SessionPrincipal } from "../server/http/principal.js";
import { decrypt } from "../server/secrets.js";
import { parseAllowList, type Lookup } from "../server/outbound/address-policy.js";
import { WebhookEndpointService } from "../server/webhooks/service.js";
import { Plan, Workspace } from "../server/workspace/entities.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type TestWorkspace } from "./support/actors.js";

const db = (): DataSource => testEnv().gateway.ctx.db;
const URL_OK = "http://127.0.0.1:9/hook";

function session(ws: TestWorkspace, member = ws.owner) {
  return { cookie: member.cookie };
}

async function create(ws: TestWorkspace, body: unknown, headers: Record<string, string> = session(ws)) {
  return http("POST", "/v1/webhook-endpoints", { body, headers });
}

describe("webhook endpoints", () => {
  describe("create, list, delete", () => {
    it("returns the signing secret once, stores it encrypted, never lists it", async () => {
      const ws = await newWorkspace();
      const created = await expectOk(
        ws.owner.client.webhooks.create({ body: { url: URL_OK, description: "orders", events: ["message.received", "message.delivered"] } }),
      );
      expect(created).to.include({ object: "webhook_endpoint", url: URL_OK, description: "orders", connection: null });
      expect(created.id).to.match(/^whe_/);
      expect(created.events).to.deep.equal(["message.received", "message.delivered"]);
      expect(created.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);

      const [row] = (await db().query(`SELECT secret_sealed FROM webhook_endpoints WHERE id = $1`, [created.id])) as { secret_sealed: string }[];
      expect(row!.secret_sealed).to.not.include(created.secret);
      expect(row!.secret_sealed).to.not.include(created.secret.slice(6));
      expect(decrypt(testEnv().gateway.ctx.config.secretKey, row!.secret_sealed)).to.equal(created.secret);

      const listed = await http("GET", "/v1/webhook-endpoints", { headers: session(ws) });
      expect(listed.status).to.equal(200);
      expect(listed.text).to.not.include(created.secret);
      expect(listed.text).to.not.include("secret");
      const { secret: _secret, ...withoutSecret } = created;
      expect((listed.json.data as unknown[])[0]).to.deep.equal(withoutSecret);
    });

    it("lists newest first and deletes with 204, then 404", async () => {
      const ws = await newWorkspace();
      const a = await expectOk(ws.owner.client.webhooks.create({ body: { url: URL_OK, events: ["message.sent"] } }));
      const b = await expectOk(ws.owner.client.webhooks.create({ body: { url: `${URL_OK}/b`, events: ["message.read"] } }));
      const listed = await expectOk(ws.owner.client.webhooks.list());
      expect(listed.data.map((e) => e.id)).to.deep.equal([b.id, a.id]);
      expect((await ws.owner.client.webhooks.delete({ params: { id: a.id } })).status).to.equal(204);
      expect((await expectOk(ws.owner.client.webhooks.list())).data.map((e) => e.id)).to.deep.equal([b.id]);
      const again = await ws.owner.client.webhooks.delete({ params: { id: a.id } });
      expect(again.status).to.equal(404);
      expect((await ws.owner.client.webhooks.delete({ params: { id: "whe_unknown" } })).status).to.equal(404);
    });

    it("keeps workspaces apart: another workspace's endpoint is 404 and never listed", async () => {
      const a = await newWorkspace();
      const b = await newWorkspace();
      const mine = await expectOk(a.owner.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"] } }));
      expect((await expectOk(b.owner.client.webhooks.list())).data).to.deep.equal([]);
      expect((await b.owner.client.webhooks.delete({ params: { id: mine.id } })).status).to.equal(404);
      const bKey = await b.key(["webhooks:read", "webhooks:write"]);
      expect((await bKey.client.webhooks.delete({ params: { id: mine.id } })).status).to.equal(404);
      expect((await bKey.client.webhooks.listDeliveries({ params: { id: mine.id }, query: {} })).status).to.equal(404);
      expect((await expectOk(a.owner.client.webhooks.list())).data.map((e) => e.id)).to.deep.equal([mine.id]);
    });

    it("collapses repeated event names", async () => {
      const ws = await newWorkspace();
      const created = await expectOk(ws.owner.client.webhooks.create({ body: { url: URL_OK, events: ["message.sent", "message.read", "message.sent"] } }));
      expect(created.events).to.deep.equal(["message.sent", "message.read"]);
    });
  });

  describe("field rules (docs/webhooks.md)", () => {
    it("url: at most 2048 characters", async () => {
      const ws = await newWorkspace();
      const base = "http://127.0.0.1:9/";
      const at = (n: number) => base + "a".repeat(n - base.length);
      expect((await create(ws, { url: at(2048), events: ["message.sent"] })).status).to.equal(201);
      const over = await create(ws, { url: at(2049), events: ["message.sent"] });
      expect(over.status).to.equal(400);
      expect(over.json.code).to.equal("validation_failed");
      expect((await create(ws, { url: "not a url", events: ["message.sent"] })).status).to.equal(400);
      expect((await create(ws, { events: ["message.sent"] })).status).to.equal(400);
    });

    it("description: at most 200 characters", async () => {
      const ws = await newWorkspace();
      expect((await create(ws, { url: URL_OK, events: ["message.sent"], description: "d".repeat(200) })).status).to.equal(201);
      expect((await create(ws, { url: URL_OK, events: ["message.sent"], description: "" })).status).to.equal(201);
      expect((await create(ws, { url: URL_OK, events: ["message.sent"], description: "d".repeat(201) })).status).to.equal(400);
    });

    it("events: 1 to 32 names, each from the catalogue; a 400 names the unknown one", async () => {
      const ws = await newWorkspace();
      const names = (n: number) => Array.from({ length: n }, (_, i) => WEBHOOK_EVENTS[i % WEBHOOK_EVENTS.length]!);
      expect((await create(ws, { url: URL_OK, events: [] })).status).to.equal(400);
      expect((await create(ws, { url: URL_OK, events: names(1) })).status).to.equal(201);
      const all = await create(ws, { url: URL_OK, events: names(32) });
      expect(all.status).to.equal(201);
      expect(all.json.events).to.deep.equal([...WEBHOOK_EVENTS]);
      expect((await create(ws, { url: URL_OK, events: names(33) })).status).to.equal(400);
      expect((await create(ws, { url: URL_OK })).status).to.equal(400);

      const unknown = await create(ws, { url: URL_OK, events: ["message.received", "message.exploded"] });
      expect(unknown.status).to.equal(400);
      expect(unknown.json.code).to.equal("validation_failed");
      expect(unknown.json.detail).to.include('"message.exploded"');
      const errors = unknown.json.errors as { path: string; message: string }[];
      expect(errors.map((e) => e.path)).to.deep.equal(["events.1"]);
      expect(errors[0]!.message).to.include("message.exploded");
    });

    it("connection: 1-40 characters; an unknown one is 404", async () => {
      const ws = await newWorkspace();
      const forty = await create(ws, { url: URL_OK, events: ["message.sent"], connection: "c".repeat(40) });
      expect(forty.status).to.equal(404);
      expect(forty.json.code).to.equal("not_found");
      expect((await create(ws, { url: URL_OK, events: ["message.sent"], connection: "c".repeat(41) })).status).to.equal(400);
      expect((await create(ws, { url: URL_OK, events: ["message.sent"], connection: "" })).status).to.equal(400);
    });

    it("refuses unknown fields", async () => {
      const ws = await newWorkspace();
      const res = await create(ws, { url: URL_OK, events: ["message.sent"], secret: "whsec_mine" });
      expect(res.status).to.equal(400);
      expect((await create(ws, { url: URL_OK, events: ["message.sent"], workspace: "wsp_x" })).status).to.equal(400);
    });
  });

  describe("connection scoping", () => {
    it("is 402 on a plan without per-connection webhooks, naming the feature", async () => {
      const ws = await newWorkspace("free");
      const key = await ws.key(["connections:write", "webhooks:write"]);
      await expectOk(key.client.connections.create({ body: { slug: "only" } }));
      const res = await create(ws, { url: URL_OK, events: ["message.received"], connection: "only" });
      expect(res.status).to.equal(402);
      expect(res.json.code).to.equal("plan_required");
      expect(res.json.feature).to.equal("connection_webhooks");
      // Unscoped endpoints are on every plan.
      expect((await create(ws, { url: URL_OK, events: ["message.received"] })).status).to.equal(201);
    });

    it("pins a connection of the workspace; another workspace's slug is 404", async () => {
      const a = await newWorkspace();
      const b = await newWorkspace();
      const aKey = await a.key(["connections:write", "webhooks:write", "webhooks:read"]);
      const bKey = await b.key(["connections:write"]);
      await expectOk(aKey.client.connections.create({ body: { slug: "front-desk" } }));
      await expectOk(bKey.client.connections.create({ body: { slug: "theirs" } }));
      const created = await expectOk(aKey.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"], connection: "front-desk" } }));
      expect(created.connection).to.equal("front-desk");
      expect((await expectOk(aKey.client.webhooks.list())).data[0]!.connection).to.equal("front-desk");
      const [row] = (await db().query(`SELECT e.connection_id, c.slug FROM webhook_endpoints e JOIN connections c ON c.id = e.connection_id WHERE e.id = $1`, [
        created.id,
      ])) as { connection_id: string; slug: string }[];
      expect(row!.slug).to.equal("front-desk");
      const theirs = await aKey.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"], connection: "theirs" } });
      expect(theirs.status).to.equal(404);
    });
  });

  describe("refused URLs (400)", () => {
    const refused: [string, string][] = [
      ["http to a public address", "http://93.184.216.34/hook"],
      ["ftp", "ftp://93.184.216.34/hook"],
      ["credentials in the URL", "https://user:pass@93.184.216.34/hook"],
      ["private 10/8", "https://10.0.0.1/hook"],
      ["private 172.16/12", "https://172.16.5.4/hook"],
      ["private 192.168/16", "https://192.168.1.1/hook"],
      ["CGNAT", "https://100.64.0.1/hook"],
      ["link-local", "https://169.254.10.10/hook"],
      ["cloud metadata", "https://169.254.169.254/latest/meta-data"],
      ["unspecified", "https://0.0.0.0/hook"],
      ["multicast", "https://224.0.0.1/hook"],
      ["documentation", "https://192.0.2.10/hook"],
      ["broadcast", "https://255.255.255.255/hook"],
      ["IPv6 loopback", "https://[::1]/hook"],
      ["IPv6 unspecified", "https://[::]/hook"],
      ["IPv6 link-local", "https://[fe80::1]/hook"],
      ["IPv6 unique local", "https://[fd00::1]/hook"],
      ["IPv6 multicast", "https://[ff02::1]/hook"],
      ["IPv6 documentation", "https://[2001:db8::1]/hook"],
      ["IPv4-mapped private", "https://[::ffff:10.0.0.1]/hook"],
      ["IPv4-mapped metadata", "https://[::ffff:169.254.169.254]/hook"],
      ["NAT64 of private", "https://[64:ff9b::a00:1]/hook"],
      ["AWS IMDS over IPv6", "https://[fd00:ec2::254]/hook"],
      ["decimal IPv4 (normalized to 10.0.0.1)", "https://167772161/hook"],
      ["hex IPv4 (normalized to 169.254.169.254)", "https://0xa9.254.169.254/hook"],
    ];
    for (const [name, url] of refused) {
      it(name, async () => {
        const ws = await newWorkspace();
        const res = await create(ws, { url, events: ["message.received"] });
        expect(res.status, `${url}: ${res.text}`).to.equal(400);
        expect(res.json.code).to.equal("validation_failed");
        expect((res.json.errors as { path: string }[])[0]!.path).to.equal("url");
      });
    }

    it("refuses a hostname that resolves to a private address, at registration (injected resolver)", async () => {
      const ws = await newWorkspace();
      const principal = await ownerPrincipal(ws);
      const answers: Record<string, string[]> = {
        "private.example.test": ["10.1.2.3"],
        "metadata.example.test": ["169.254.169.254"],
        "mixed.example.test": ["93.184.216.34", "192.168.0.10"],
        "mapped.example.test": ["::ffff:10.0.0.1"],
        "ula.example.test": ["fd12:3456::1"],
        "loopback.example.test": ["127.0.0.1"],
        "public.example.test": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
      };
      const lookup: Lookup = async (host) => (answers[host] ?? []).map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
      // No allow-list here: this is production's policy.
      const service = new WebhookEndpointService(db(), { secretKey: testEnv().gateway.ctx.config.secretKey, allowPrivate: parseAllowList([]), lookup });
      const body = (host: string): CreateWebhookEndpointBody => ({ url: `https://${host}/hook`, events: ["message.received"] });
      for (const host of Object.keys(answers).filter((h) => !h.startsWith("public"))) {
        const err = await service.create(principal, body(host)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, host).to.be.instanceOf(ApiError);
        expect((err as ApiError).status, host).to.equal(400);
        expect((err as ApiError).message, host).to.include(answers[host]!.at(-1)!);
      }
      const unresolvable = await service.create(principal, body("nowhere.example.test")).catch((e: unknown) => e);
      expect((unresolvable as ApiError).status).to.equal(400);
      const ok = await service.create(principal, body("public.example.test"));
      expect(ok.url).to.equal("https://public.example.test/hook");
    });
  });

  describe("who may manage endpoints", () => {
    it("keys: webhooks:write creates and deletes, webhooks:read lists, neither is 403", async () => {
      const ws = await newWorkspace();
      const writer = await ws.key(["webhooks:write"]);
      const reader = await ws.key(["webhooks:read"]);
      const other = await ws.key(["messages:read", "connections:write"]);

      const created = await expectOk(writer.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"] } }));
      expect((await reader.client.webhooks.list()).status).to.equal(200);
      expect((await writer.client.webhooks.list()).status).to.equal(403);

      const denied = await reader.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"] } });
      expect(denied.status).to.equal(403);
      expect((denied.body as { code: string }).code).to.equal("insufficient_scope");
      expect((await reader.client.webhooks.delete({ params: { id: created.id } })).status).to.equal(403);
      expect((await other.client.webhooks.list()).status).to.equal(403);
      expect((await other.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"] } })).status).to.equal(403);
      expect((await reader.client.webhooks.listDeliveries({ params: { id: created.id }, query: {} })).status).to.equal(200);
      expect((await writer.client.webhooks.delete({ params: { id: created.id } })).status).to.equal(204);
    });

    it("sessions: owner, admin and developer may; viewer and billing get 403", async () => {
      const ws = await newWorkspace();
      for (const role of ["admin", "developer"] as const) {
        const member = await ws.addMember(role);
        const created = await member.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"] } });
        expect(created.status, role).to.equal(201);
      }
      for (const role of ["viewer", "billing"] as const) {
        const member = await ws.addMember(role);
        const created = await member.client.webhooks.create({ body: { url: URL_OK, events: ["message.received"] } });
        expect(created.status, role).to.equal(403);
        expect((created.body as { code: string }).code).to.equal("forbidden");
        expect((await member.client.webhooks.list()).status, role).to.equal(403);
      }
      const id = (await expectOk(ws.owner.client.webhooks.list())).data[0]!.id;
      const viewer = await ws.addMember("viewer");
      expect((await viewer.client.webhooks.delete({ params: { id } })).status).to.equal(403);
    });

    it("without credentials: 401", async () => {
      expect((await http("GET", "/v1/webhook-endpoints")).status).to.equal(401);
      expect((await http("POST", "/v1/webhook-endpoints", { body: { url: URL_OK, events: ["message.sent"] } })).status).to.equal(401);
      expect((await http("DELETE", "/v1/webhook-endpoints/whe_x")).status).to.equal(401);
    });
  });

  describe("audit", () => {
    it("records who, with which credential, when and what, for every create and delete", async () => {
      const ws = await newWorkspace();
      const key = await ws.key(["webhooks:write"]);
      const before = new Date(Date.now() - 1000);
      const byKey = await expectOk(key.client.webhooks.create({ body: { url: URL_OK, events: ["message.failed"], description: "deploy script" } }));
      const bySession = await expectOk(ws.owner.client.webhooks.create({ body: { url: `${URL_OK}/s`, events: ["message.received"] } }));
      await expectOk(ws.owner.client.webhooks.delete({ params: { id: byKey.id } }));
      await expectOk(key.client.webhooks.delete({ params: { id: bySession.id } }));

      const entries = (await db().query(
        `SELECT a.action, a.target_type, a.target_id, a.credential_type, a.credential_id, a.actor_user_id, a.details, a.created_at, u.email
           FROM audit_log a LEFT JOIN users u ON u.id = a.actor_user_id
          WHERE a.workspace_id = $1 AND a.target_type = 'webhook_endpoint' ORDER BY a.created_at, a.id`,
        [ws.id],
      )) as { action: string; target_id: string; credential_type: string; credential_id: string; email: string; details: Record<string, unknown>; created_at: Date }[];
      expect(entries.map((e) => [e.action, e.target_id, e.credential_type])).to.deep.equal([
        ["webhook_endpoint.created", byKey.id, "api_key"],
        ["webhook_endpoint.created", bySession.id, "session"],
        ["webhook_endpoint.deleted", byKey.id, "session"],
        ["webhook_endpoint.deleted", bySession.id, "api_key"],
      ]);
      for (const e of entries) {
        expect(e.email).to.equal(ws.owner.email);
        expect(e.created_at.getTime()).to.be.greaterThan(before.getTime());
        expect(e.credential_id).to.be.a("string").and.not.equal("");
      }
      expect(entries[0]!.credential_id).to.equal(key.id);
      expect(entries[0]!.details).to.deep.include({ url: URL_OK, events: ["message.failed"], description: "deploy script", connection: null });
      expect(entries[2]!.details).to.deep.include({ url: URL_OK });
      expect(JSON.stringify(entries)).to.not.include("whsec_");
    });
  });
});

/** The owner as the service sees a session principal (for calling the service directly). */
async function ownerPrincipal(ws: TestWorkspace): Promise<SessionPrincipal> {
  const [owner] = (await db().query(`SELECT m.user_id FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND u.email = $2`, [
    ws.id,
    ws.owner.email,
  ])) as { user_id: string }[];
  const workspace = await db().getRepository(Workspace).findOneByOrFail({ id: ws.id });
  const plan = await db().getRepository(Plan).findOneByOrFail({ id: workspace.planId });
  return { kind: "session", workspaceId: ws.id, userId: owner!.user_id, sessionId: "test", email: ws.owner.email, role: "owner", plan };
}
