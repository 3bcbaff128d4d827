// Sending with the dashboard's session: a member whose role may grant messages:write
// sends under every rule a key's send meets (plan, allowance, idempotency, content, connection
// state), a viewer or billing member cannot, a cross-site request is refused, and the member is
// counted in a rate bucket of their own where a key would be.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, signIn, type Member, type TestWorkspace } from "./support/actors.js";
import { startChildGateway } from "./support/child-gateway.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const slug = () => `dash-${randomBytes(3).toString("hex")}`;
const idemKey = () => `dash-${randomBytes(6).toString("hex")}`;

async function written(workspaceId: string): Promise<{ messages: number; keys: number }> {
  const [row] = (await testEnv().gateway.ctx.db.query(
    `SELECT (SELECT count(*) FROM messages WHERE workspace_id = $1)::int AS messages,
            (SELECT count(*) FROM idempotency_keys WHERE workspace_id = $1)::int AS keys`,
    [workspaceId],
  )) as { messages: number; keys: number }[];
  return row!;
}

/** A send with `member`'s cookie and no Origin (as a non-browser client), or with the headers given. */
function sendAs(member: Member, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return http("POST", "/v1/messages/text", { body, headers: { cookie: member.cookie, ...headers } });
}

describe("sending with a dashboard session", function () {
  this.timeout(30_000);
  let ws: TestWorkspace;
  let developer: Member;
  let connection: string;

  before(async () => {
    ws = await newWorkspace("pro");
    developer = await ws.addMember("developer");
    connection = slug();
    await pairConnection(ws.owner.client, connection, uniquePhone());
  });

  it("accepts a developer's send with 202 and delivers it like a key's", async () => {
    const to = uniquePhone();
    const sent = await developer.client.messages.send({ body: { connection, to, body: "from the dashboard" } });
    expect(sent.status).to.equal(202);
    const id = (sent.body as { id: string }).id;
    const delivered = await waitFor(
      () => expectOk(developer.client.messages.get({ params: { id } })),
      (m) => m.status === "delivered" || m.status === "read",
      15_000,
    );
    expect(delivered.timeline.map((t) => t.status)).to.include.members(["accepted", "queued", "sent"]);
    const received = await sandbox("GET", `/received?to=${encodeURIComponent(to)}`);
    expect(JSON.stringify(received.json)).to.include("from the dashboard");
  });

  it("refuses a viewer's and a billing member's send with 403, writing nothing", async () => {
    for (const role of ["viewer", "billing"] as const) {
      const member = await ws.addMember(role);
      const before = await written(ws.id);
      const res = await sendAs(member, { connection, to: uniquePhone(), body: "not mine to send" }, { "idempotency-key": idemKey() });
      expect(res.status, role).to.equal(403);
      expect(res.json.code).to.equal("forbidden");
      expect(res.json.detail).to.include("messages:write");
      expect(await written(ws.id)).to.deep.equal(before);
    }
  });

  it("refuses a cookie-authenticated send from another site; the dashboard's own origin passes", async () => {
    const before = await written(ws.id);
    const body = { connection, to: uniquePhone(), body: "forged" };
    const crossSite = await sendAs(ws.owner, body, { origin: "https://evil.example", "sec-fetch-site": "cross-site", "idempotency-key": idemKey() });
    expect(crossSite.status).to.equal(403);
    expect(crossSite.json.code).to.equal("cross_site_request");
    // A bare Origin of another site, without Sec-Fetch-Site, is refused as well.
    const otherOrigin = await sendAs(ws.owner, body, { origin: "https://evil.example" });
    expect(otherOrigin.status).to.equal(403);
    expect(await written(ws.id)).to.deep.equal(before);
    const origin = new URL(testEnv().gateway.ctx.config.webUrl).origin;
    const same = await sendAs(ws.owner, { ...body, body: "from the page" }, { origin, "sec-fetch-site": "same-origin" });
    expect(same.status).to.equal(202);
  });

  it("replays an Idempotency-Key: the same message once, shared with the workspace's keys; another body is refused", async () => {
    const key = idemKey();
    const body = { connection, to: uniquePhone(), body: "once only" };
    const before = await written(ws.id);
    const first = await sendAs(developer, body, { "idempotency-key": key });
    expect(first.status).to.equal(202);
    expect(first.headers.get("idempotent-replayed")).to.equal(null);
    const again = await sendAs(developer, body, { "idempotency-key": key });
    expect(again.status).to.equal(202);
    expect(again.headers.get("idempotent-replayed")).to.equal("true");
    expect(again.json.id).to.equal(first.json.id);
    // The records are the workspace's, whichever credential sent: a key replays the session's send.
    const apiKey = await ws.key(["messages:write"]);
    const byKey = await http("POST", "/v1/messages/text", { body, headers: { authorization: `Bearer ${apiKey.key}`, "idempotency-key": key } });
    expect(byKey.status).to.equal(202);
    expect(byKey.json.id).to.equal(first.json.id);
    const changed = await sendAs(developer, { ...body, body: "twice?" }, { "idempotency-key": key });
    expect(changed.status).to.equal(422);
    expect(changed.json.code).to.equal("idempotency_mismatch");
    expect(await written(ws.id)).to.deep.equal({ messages: before.messages + 1, keys: before.keys + 1 });
  });

  it("keeps every send rule: content, connection state, the plan's scheduling and its monthly allowance", async () => {
    const free = await newWorkspace("free");
    const owner = free.owner;
    const line = slug();
    await expectOk(owner.client.connections.create({ body: { slug: line } }));
    const empty = await sendAs(owner, { connection: line, to: uniquePhone() });
    expect(empty.status).to.equal(400);
    const notReady = await sendAs(owner, { connection: line, to: uniquePhone(), body: "too early" });
    expect(notReady.status).to.equal(409);
    expect(notReady.json.code).to.equal("connection_not_ready");
    await pairConnection(owner.client, line, uniquePhone());
    const later = await sendAs(owner, { connection: line, to: uniquePhone(), body: "later", send_at: new Date(Date.now() + 86_400_000).toISOString() });
    expect(later.status).to.equal(402);
    await testEnv().gateway.ctx.db.query(
      `INSERT INTO usage_daily (workspace_id, day, shard, messages_outbound) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 99, 999)`,
      [free.id],
    );
    const last = await sendAs(owner, { connection: line, to: uniquePhone(), body: "1000th" });
    expect(last.status).to.equal(202);
    const over = await sendAs(owner, { connection: line, to: uniquePhone(), body: "1001st" }, { "idempotency-key": idemKey() });
    expect(over.status).to.equal(429);
    expect(over.json.code).to.equal("quota_exceeded");
    expect(await written(free.id)).to.deep.equal({ messages: 1, keys: 0 });
  });

  it("counts a member's sessions in one rate bucket where a key would be counted, apart from their keys", async () => {
    // One token a minute: nothing refills while the test runs, however slow the database.
    const child = await startChildGateway({ API_RATE_LIMIT_PER_MINUTE: "1", API_RATE_LIMIT_BURST: "3", DISPATCHER: "off" });
    try {
      const second = await signIn(developer.email);
      const body = { connection, to: uniquePhone(), body: "paced" };
      const statuses: number[] = [];
      const send = () => fetch(`${child.url}/v1/messages/text`, { method: "POST", headers: { "content-type": "application/json", cookie: developer.cookie }, body: JSON.stringify(body) });
      for (let i = 0; i < 4; i++) statuses.push((await send()).status);
      // The burst's last token is the third send; the fourth is the first refused.
      expect(statuses).to.deep.equal([202, 202, 202, 429]);
      // Another session of the same member shares the bucket.
      const other = await fetch(`${child.url}/v1/messages`, { headers: { cookie: second } });
      expect(other.status).to.equal(429);
      expect(((await other.json()) as { code: string }).code).to.equal("rate_limited");
      // A key of the same member, and another member, have buckets of their own.
      const apiKey = await ws.key(["messages:read"], developer);
      expect((await fetch(`${child.url}/v1/messages`, { headers: { authorization: `Bearer ${apiKey.key}` } })).status).to.equal(200);
      expect((await fetch(`${child.url}/v1/messages`, { headers: { cookie: ws.owner.cookie } })).status).to.equal(200);
    } finally {
      await child.terminate();
    }
  });
});
