import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { purgeExpiredIdempotencyKeys } from "../server/http/idempotency.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { pairConnection } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

function phone(): string {
  return `+1555${String(randomBytes(4).readUInt32BE(0) % 10_000_000).padStart(7, "0")}`;
}

async function connected(ws: TestWorkspace, slug = `c-${randomBytes(3).toString("hex")}`) {
  const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
  await pairConnection(key.client, slug, phone());
  return { ...key, slug, auth: { authorization: `Bearer ${key.key}` } };
}

async function messageCount(workspaceId: string): Promise<number> {
  const [row] = (await testEnv().gateway.ctx.db.query(`SELECT count(*)::int AS n FROM messages WHERE workspace_id = $1`, [workspaceId])) as { n: number }[];
  return row!.n;
}

async function received(to: string): Promise<unknown[]> {
  const res = await http("GET", `/sandbox/v1/received?to=${encodeURIComponent(to)}`);
  return (res.json.data ?? res.json) as unknown[];
}

describe("sending messages", () => {
  let ws: TestWorkspace;
  let c: Awaited<ReturnType<typeof connected>>;
  before(async () => {
    ws = await newWorkspace();
    c = await connected(ws);
  });

  it("accepts a text with 202, stores it queued, and it reaches read with every step in its timeline", async () => {
    const to = phone();
    const res = await c.client.messages.send({ body: { connection: c.slug, to, body: "hello" } });
    expect(res.status).to.equal(202);
    if (res.status !== 202) return;
    expect(res.body).to.include({ status: "queued", direction: "outbound", connection: c.slug, body: "hello" });
    const read = await waitFor(
      () => expectOk(c.client.messages.get({ params: { id: res.body.id } })),
      (m) => m.status === "read",
      10_000,
    );
    const steps = read.timeline.map((t) => t.status);
    for (const s of ["accepted", "queued", "submitting", "submitted", "sent", "delivered", "read"]) expect(steps).to.include(s);
    expect(steps.indexOf("accepted")).to.be.lessThan(steps.indexOf("queued"));
    expect(steps.filter((s) => s === "accepted")).to.have.length(1);
    expect(read.timeline[0]).to.include({ status: "accepted", at: read.created_at });
    expect(read.provider_message_id).to.be.a("string");
    expect(await received(to)).to.have.length(1);
  });

  it("applies every field rule of the send body at its limits, and a refused body changes nothing", async () => {
    const ok = { connection: c.slug, to: phone(), body: "x" };
    const cases: [string, unknown, number][] = [
      ["to 5 chars", { ...ok, to: "12345" }, 202],
      ["to 4 chars", { ...ok, to: "1234" }, 400],
      ["to 40 chars", { ...ok, to: "1".repeat(40) }, 202],
      ["to 41 chars", { ...ok, to: "1".repeat(41) }, 400],
      ["to {phone}", { ...ok, to: { phone: phone() } }, 202],
      ["to {group}", { ...ok, to: { group: "group-12345" } }, 202],
      ["to {phone, group}", { ...ok, to: { phone: phone(), group: "group-12345" } }, 400],
      ["to {}", { ...ok, to: {} }, 400],
      ["to {phone 4}", { ...ok, to: { phone: "1234" } }, 400],
      ["to {group 41}", { ...ok, to: { group: "g".repeat(41) } }, 400],
      ["body 4096", { ...ok, body: "b".repeat(4096) }, 202],
      ["body 4097", { ...ok, body: "b".repeat(4097) }, 400],
      // Characters are code points (JSON Schema's maxLength): an emoji is one, not two UTF-16 units.
      ["body 4096 emoji", { ...ok, body: "😀".repeat(4096) }, 202],
      ["body 4097 emoji", { ...ok, body: "😀".repeat(4097) }, 400],
      ["to 40 chars with emoji", { ...ok, to: "😀".repeat(40) }, 202],
      ["connection 41", { ...ok, connection: "c".repeat(41) }, 400],
      ["connection empty", { ...ok, connection: "" }, 400],
      ["unknown connection", { ...ok, connection: "no-such-connection" }, 400],
      ["media url 2048", { ...ok, media: { url: `https://e.example/${"m".repeat(2048 - 18)}` } }, 202],
      ["media url 2049", { ...ok, media: { url: `https://e.example/${"m".repeat(2049 - 18)}` } }, 400],
      ["media not a url", { ...ok, media: { url: "not a url" } }, 400],
      ["media javascript:", { ...ok, media: { url: "javascript:alert(1)" } }, 400],
      ["media kind", { ...ok, media: { url: "https://e.example/a.png", kind: "sticker" } }, 400],
      ["mimetype 3", { ...ok, media: { url: "https://e.example/a", mimetype: "a/b" } }, 202],
      ["mimetype 2", { ...ok, media: { url: "https://e.example/a", mimetype: "ab" } }, 400],
      ["mimetype 255", { ...ok, media: { url: "https://e.example/a", mimetype: "a".repeat(255) } }, 202],
      ["mimetype 256", { ...ok, media: { url: "https://e.example/a", mimetype: "a".repeat(256) } }, 400],
      ["filename 1", { ...ok, media: { url: "https://e.example/a", filename: "f" } }, 202],
      ["filename 0", { ...ok, media: { url: "https://e.example/a", filename: "" } }, 400],
      ["filename 256", { ...ok, media: { url: "https://e.example/a", filename: "f".repeat(256) } }, 400],
      ["media extra", { ...ok, media: { url: "https://e.example/a", size: 1 } }, 400],
      ["media no url", { ...ok, media: { kind: "image" } }, 400],
      ["lat -90 / lng 180", { ...ok, location: { latitude: -90, longitude: 180 } }, 202],
      ["lat 90 / lng -180", { ...ok, location: { latitude: 90, longitude: -180, title: "t".repeat(255) } }, 202],
      ["lat 90.0001", { ...ok, location: { latitude: 90.0001, longitude: 0 } }, 400],
      ["lat -90.0001", { ...ok, location: { latitude: -90.0001, longitude: 0 } }, 400],
      ["lng 180.0001", { ...ok, location: { latitude: 0, longitude: 180.0001 } }, 400],
      ["title 0", { ...ok, location: { latitude: 0, longitude: 0, title: "" } }, 400],
      ["title 256", { ...ok, location: { latitude: 0, longitude: 0, title: "t".repeat(256) } }, 400],
      ["location extra", { ...ok, location: { latitude: 0, longitude: 0, altitude: 3 } }, 400],
      ["context object", { ...ok, context: { order: 42, nested: { a: [1] } }, metadata: { k: "v" } }, 202],
      ["context array", { ...ok, context: [1, 2] }, 400],
      ["sensitivity", { ...ok, context_sensitivity: "restricted" }, 202],
      ["sensitivity unknown", { ...ok, context_sensitivity: "secret" }, 400],
      ["timezone 64", { ...ok, timezone: "America/Argentina/ComodRivadavia".padEnd(64, "x") }, 400],
      ["timezone 65", { ...ok, timezone: "x".repeat(65) }, 400],
      ["timezone IANA", { ...ok, timezone: "America/Argentina/Buenos_Aires" }, 202],
      ["timezone unknown", { ...ok, timezone: "Mars/Olympus" }, 400],
      ["send_at past with Z", { ...ok, send_at: "2020-01-01T00:00:00Z" }, 202],
      ["send_at no zone", { ...ok, send_at: "2030-01-01T00:00:00" }, 400],
      ["send_at offset", { ...ok, send_at: "2020-01-01T00:00:00+05:45" }, 202],
      ["send_at 2027-02-29", { ...ok, send_at: "2027-02-29T10:00:00Z" }, 400],
      ["send_at 2028-02-30", { ...ok, send_at: "2028-02-30T10:00:00Z" }, 400],
      ["send_at month 13", { ...ok, send_at: "2030-13-01T10:00:00Z" }, 400],
      ["no content", { connection: c.slug, to: phone() }, 400],
      ["empty body only", { connection: c.slug, to: phone(), body: "" }, 400],
      ["media only, empty body", { connection: c.slug, to: phone(), body: "", media: { url: "https://e.example/a.png", kind: "image" } }, 202],
      ["unknown field", { ...ok, priority: "high" }, 400],
      ["workspace in body", { ...ok, workspace: "wsp_x" }, 400],
    ];
    for (const [name, body, status] of cases) {
      const before = await messageCount(ws.id);
      const res = await http("POST", "/v1/messages/text", { body, headers: c.auth });
      expect(res.status, `${name}: ${res.text}`).to.equal(status);
      expect(await messageCount(ws.id), name).to.equal(before + (status === 202 ? 1 : 0));
      if (status === 400) {
        expect(res.headers.get("content-type"), name).to.match(/application\/problem\+json/);
        expect(res.json.code, name).to.equal("validation_failed");
      }
    }
  });

  it("accepts a leap day in a leap year as send_at", async () => {
    const res = await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: "x", send_at: "2028-02-29T10:00:00Z" }, headers: c.auth });
    expect(res.status).to.equal(202);
    expect(res.json.status).to.equal("scheduled");
    await http("POST", `/v1/messages/${res.json.id}/cancel`, { headers: c.auth });
  });

  it("answers 409 connection_not_ready when the connection is not connected", async () => {
    await expectOk(c.client.connections.create({ body: { slug: "never-paired" } }));
    const res = await http("POST", "/v1/messages/text", { body: { connection: "never-paired", to: phone(), body: "x" }, headers: c.auth });
    expect(res.status).to.equal(409);
    expect(res.json.code).to.equal("connection_not_ready");
  });

  it("fails a message to an off-network number", async () => {
    const to = phone();
    await http("POST", "/sandbox/v1/numbers", { body: { phone: to, on_network: false } });
    const sent = await expectOk(c.client.messages.send({ body: { connection: c.slug, to, body: "x" } }));
    const failed = await waitFor(() => expectOk(c.client.messages.get({ params: { id: sent.id } })), (m) => m.status === "failed", 10_000);
    expect(failed.error?.code).to.be.a("string");
    expect(failed.timeline.map((t) => t.status)).to.include("failed");
  });

  it("stops at delivered for a contact without read receipts", async () => {
    const to = phone();
    await http("POST", "/sandbox/v1/numbers", { body: { phone: to, on_network: true, receipts: "delivered" } });
    const sent = await expectOk(c.client.messages.send({ body: { connection: c.slug, to, body: "x" } }));
    const delivered = await waitFor(() => expectOk(c.client.messages.get({ params: { id: sent.id } })), (m) => m.status === "delivered", 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect((await expectOk(c.client.messages.get({ params: { id: sent.id } }))).status).to.equal("delivered");
    expect(delivered.timeline.map((t) => t.status)).to.not.include("read");
  });
});

describe("idempotency of sends", () => {
  let ws: TestWorkspace;
  let c: Awaited<ReturnType<typeof connected>>;
  before(async () => {
    ws = await newWorkspace();
    c = await connected(ws);
  });

  it("replays the original response for the same key and body, with Idempotent-Replayed", async () => {
    const key = `order-${randomBytes(6).toString("hex")}`;
    const body = { connection: c.slug, to: phone(), body: "once", metadata: { b: 1, a: 2 } };
    const first = await http("POST", "/v1/messages/text", { body, headers: { ...c.auth, "idempotency-key": key } });
    expect(first.status).to.equal(202);
    // the same JSON with keys in another order is the same body
    const reordered = { metadata: { a: 2, b: 1 }, body: "once", to: body.to, connection: c.slug };
    const second = await http("POST", "/v1/messages/text", { body: reordered, headers: { ...c.auth, "idempotency-key": key } });
    expect(second.status).to.equal(202);
    expect(second.headers.get("idempotent-replayed")).to.equal("true");
    expect(second.json.id).to.equal(first.json.id);
    expect(second.json).to.deep.equal(first.json);
    const rows: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM messages WHERE workspace_id = $1 AND body = 'once'`, [ws.id]);
    expect(rows).to.have.length(1);
  });

  it("keeps a key for 24 hours: one minute before, another body is 422; after, the key sends anew", async () => {
    const key = `ret-${randomBytes(6).toString("hex")}`;
    const to = phone();
    const send = (text: string) => http("POST", "/v1/messages/text", { body: { connection: c.slug, to, body: text }, headers: { ...c.auth, "idempotency-key": key } });
    const age = (interval: string) =>
      testEnv().gateway.ctx.db.query(`UPDATE idempotency_keys SET created_at = now() - $3::interval WHERE workspace_id = $1 AND key = $2`, [ws.id, key, interval]);
    const first = await send("retained");
    expect(first.status).to.equal(202);
    await age("23 hours 59 minutes");
    expect((await send("other")).status).to.equal(422);
    await age("24 hours 1 second");
    const anew = await send("other");
    expect(anew.status).to.equal(202);
    expect(anew.headers.get("idempotent-replayed")).to.equal(null);
    expect(anew.json.id).to.not.equal(first.json.id);
    const replay = await send("other");
    expect(replay.headers.get("idempotent-replayed")).to.equal("true");
    expect(replay.json.id).to.equal(anew.json.id);
  });

  it("prunes key records past retention and keeps the rest", async () => {
    const db = testEnv().gateway.ctx.db;
    const keys = [`old-${randomBytes(6).toString("hex")}`, `new-${randomBytes(6).toString("hex")}`];
    for (const key of keys) {
      expect((await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: key }, headers: { ...c.auth, "idempotency-key": key } })).status).to.equal(202);
    }
    await db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE workspace_id = $1 AND key = $2`, [ws.id, keys[0]]);
    expect(await purgeExpiredIdempotencyKeys(db)).to.be.at.least(1);
    const left = (await db.query(`SELECT key FROM idempotency_keys WHERE workspace_id = $1 AND key = ANY($2)`, [ws.id, keys])) as { key: string }[];
    expect(left.map((r) => r.key)).to.deep.equal([keys[1]]);
  });

  it("answers 422 for the same key with another body", async () => {
    const key = `k-${randomBytes(6).toString("hex")}`;
    await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: "a" }, headers: { ...c.auth, "idempotency-key": key } });
    const res = await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: "b" }, headers: { ...c.auth, "idempotency-key": key } });
    expect(res.status).to.equal(422);
    expect(res.json.code).to.equal("idempotency_mismatch");
  });

  it("lets exactly one of concurrent duplicates through; the others get 409 with Retry-After", async () => {
    const key = `race-${randomBytes(6).toString("hex")}`;
    const body = { connection: c.slug, to: phone(), body: "race" };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => http("POST", "/v1/messages/text", { body, headers: { ...c.auth, "idempotency-key": key } })),
    );
    const accepted = results.filter((r) => r.status === 202 && r.headers.get("idempotent-replayed") !== "true");
    expect(accepted).to.have.length(1);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.json.code).to.equal("idempotency_in_flight");
      expect(r.headers.get("retry-after")).to.equal("1");
    }
    for (const r of results) expect([202, 409]).to.include(r.status);
    const rows: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM messages WHERE workspace_id = $1 AND body = 'race'`, [ws.id]);
    expect(rows).to.have.length(1);
  });

  it("validates the key: 255 printable characters pass, 256 or control characters do not", async () => {
    const body = () => ({ connection: c.slug, to: phone(), body: "k" });
    expect((await http("POST", "/v1/messages/text", { body: body(), headers: { ...c.auth, "idempotency-key": `${randomBytes(4).toString("hex")}${"k".repeat(247)}` } })).status).to.equal(202);
    expect((await http("POST", "/v1/messages/text", { body: body(), headers: { ...c.auth, "idempotency-key": "k".repeat(256) } })).status).to.equal(400);
    expect((await http("POST", "/v1/messages/text", { body: body(), headers: { ...c.auth, "idempotency-key": "tab\there" } })).status).to.equal(400);
  });

  it("does not deduplicate sends without a key; the SDK adds one to every send", async () => {
    const body = { connection: c.slug, to: phone(), body: "no-key" };
    await http("POST", "/v1/messages/text", { body, headers: c.auth });
    await http("POST", "/v1/messages/text", { body, headers: c.auth });
    const rows: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM messages WHERE workspace_id = $1 AND body = 'no-key'`, [ws.id]);
    expect(rows).to.have.length(2);
    const before: { n: number }[] = await testEnv().gateway.ctx.db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE workspace_id = $1`, [ws.id]);
    await expectOk(c.client.messages.send({ body: { ...body, body: "sdk" } }));
    const after: { n: number }[] = await testEnv().gateway.ctx.db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE workspace_id = $1`, [ws.id]);
    expect(after[0]!.n).to.equal(before[0]!.n + 1);
  });

  it("keys are scoped to the workspace of the credential", async () => {
    const other = await newWorkspace();
    const oc = await connected(other);
    const key = `shared-${randomBytes(6).toString("hex")}`;
    const a = await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: "a" }, headers: { ...c.auth, "idempotency-key": key } });
    const b = await http("POST", "/v1/messages/text", { body: { connection: oc.slug, to: phone(), body: "b" }, headers: { ...oc.auth, "idempotency-key": key } });
    expect([a.status, b.status]).to.deep.equal([202, 202]);
    expect(a.json.id).to.not.equal(b.json.id);
  });
});

describe("deferred sends, cancel and reschedule", () => {
  let ws: TestWorkspace;
  let c: Awaited<ReturnType<typeof connected>>;
  before(async () => {
    ws = await newWorkspace();
    c = await connected(ws);
  });

  it("holds a future send_at as scheduled, then sends it at that time", async () => {
    const sendAt = new Date(Date.now() + 2500).toISOString();
    const sent = await expectOk(c.client.messages.send({ body: { connection: c.slug, to: phone(), body: "later", send_at: sendAt } }));
    expect(sent.status).to.equal("scheduled");
    expect(sent.send_at).to.equal(sendAt);
    const read = await waitFor(() => expectOk(c.client.messages.get({ params: { id: sent.id } })), (m) => m.status === "read", 15_000);
    const queuedAt = read.timeline.find((t) => t.status === "queued")!.at;
    expect(Date.parse(queuedAt)).to.be.at.least(Date.parse(sendAt) - 1000);
  });

  it("refuses a deferred send on a plan without scheduling with 402", async () => {
    const free = await newWorkspace("free");
    const fc = await connected(free);
    const res = await http("POST", "/v1/messages/text", {
      body: { connection: fc.slug, to: phone(), body: "x", send_at: new Date(Date.now() + 3_600_000).toISOString() },
      headers: fc.auth,
    });
    expect(res.status).to.equal(402);
    expect(res.json).to.include({ code: "plan_required", feature: "scheduling", required_plan: "pro" });
  });

  it("reschedules while scheduled, cancels before hand-off, and refuses both afterwards with 409", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const sent = await expectOk(c.client.messages.send({ body: { connection: c.slug, to: phone(), body: "x", send_at: later } }));
    const newTime = new Date(Date.now() + 7_200_000).toISOString();
    const moved = await expectOk(c.client.messages.reschedule({ params: { id: sent.id }, body: { send_at: newTime, timezone: "Europe/Berlin" } }));
    expect(moved).to.include({ status: "scheduled", send_at: newTime, timezone: "Europe/Berlin" });
    expect((await http("POST", `/v1/messages/${sent.id}/reschedule`, { body: { send_at: "2030-01-01T00:00:00" }, headers: c.auth })).status).to.equal(400);
    const canceled = await expectOk(c.client.messages.cancel({ params: { id: sent.id } }));
    expect(canceled.status).to.equal("canceled");
    const again = await http("POST", `/v1/messages/${sent.id}/reschedule`, { body: { send_at: newTime }, headers: c.auth });
    expect(again.status).to.equal(409);
    const twice = await http("POST", `/v1/messages/${sent.id}/cancel`, { headers: c.auth });
    expect(twice.status).to.equal(409);
    expect(twice.json.detail).to.equal("The message is already canceled.");

    const now = await expectOk(c.client.messages.send({ body: { connection: c.slug, to: phone(), body: "now" } }));
    await waitFor(() => expectOk(c.client.messages.get({ params: { id: now.id } })), (m) => ["submitted", "sent", "delivered", "read"].includes(m.status), 10_000);
    const late = await http("POST", `/v1/messages/${now.id}/cancel`, { headers: c.auth });
    expect(late.status).to.equal(409);
    expect(late.json.code).to.equal("invalid_state");
    expect(late.json.detail).to.match(/^The message is (submitted|sent|delivered|read): it was already handed to the provider and cannot be canceled\.$/);
    expect((await http("POST", "/v1/messages/msg_unknown/cancel", { headers: c.auth })).status).to.equal(404);
  });

  it("cancels a queued message before the dispatcher hands it off, and it is never sent", async () => {
    const dispatcher = testEnv().gateway.ctx.dispatcher;
    await dispatcher.stop();
    try {
      const to = phone();
      const sent = await expectOk(c.client.messages.send({ body: { connection: c.slug, to, body: "x" } }));
      expect((await expectOk(c.client.messages.cancel({ params: { id: sent.id } }))).status).to.equal("canceled");
      dispatcher.start();
      // The dispatcher takes a connection's queue oldest first: once a later message is handed
      // off, it has been past the canceled one.
      const later = await expectOk(c.client.messages.send({ body: { connection: c.slug, to: phone(), body: "later" } }));
      await waitFor(() => expectOk(c.client.messages.get({ params: { id: later.id } })), (m) => m.status !== "queued", 10_000);
      expect(await received(to)).to.have.length(0);
    } finally {
      dispatcher.start();
    }
  });
});

describe("send limits", () => {
  it("refuses sends past the plan's monthly allowance with 429 and Retry-After", async () => {
    const ws = await newWorkspace("free");
    const c = await connected(ws);
    await testEnv().gateway.ctx.db.query(
      `INSERT INTO usage_daily (workspace_id, day, shard, messages_outbound) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 99, 999)`,
      [ws.id],
    );
    expect((await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: "1000th" }, headers: c.auth })).status).to.equal(202);
    const over = await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: phone(), body: "1001st" }, headers: { ...c.auth, "idempotency-key": `q-${randomBytes(6).toString("hex")}` } });
    expect(over.status).to.equal(429);
    // Refused: nothing written, not even the key's record.
    const written = (await testEnv().gateway.ctx.db.query(
      `SELECT (SELECT count(*) FROM messages WHERE workspace_id = $1 AND body = '1001st')::int AS messages,
              (SELECT count(*) FROM idempotency_keys WHERE workspace_id = $1)::int AS keys`,
      [ws.id],
    )) as { messages: number; keys: number }[];
    expect(written[0]).to.deep.equal({ messages: 0, keys: 0 });
    expect(over.json.code).to.equal("quota_exceeded");
    expect(Number(over.headers.get("retry-after"))).to.be.greaterThan(0);
    expect((await expectOk(ws.owner.client.workspace.get())).usage.messages_this_month).to.equal(1000);
  });
});
