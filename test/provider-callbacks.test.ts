// The transport callback, POST /v1/provider/{providerName}/{token}: authenticated by the
// connection's callback token only, deduplicated on event_id, each report applied in one
// transaction. Reports come both from the sandbox (the real path) and posted directly.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { DataSource } from "typeorm";
import { expectOk } from "../sdk/src/index.js";
import { newId } from "../server/ids.js";
import { testEnv } from "./setup.js";
import { startChildGateway } from "./support/child-gateway.js";
import { http, newWorkspace, type Client } from "./support/actors.js";
import { pairConnection, sandbox, uniquePhone, waitForConnection } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = (): DataSource => testEnv().gateway.ctx.db;

function eventId(): string {
  return `evt-${randomBytes(8).toString("hex")}`;
}

async function setup(): Promise<{ client: Client; workspaceId: string; token: string; id: string; slug: string }> {
  const ws = await newWorkspace();
  const { client } = await ws.key(["connections:read", "connections:write"]);
  const slug = `cb-${randomBytes(3).toString("hex")}`;
  const created = await expectOk(client.connections.create({ body: { slug } }));
  return { client, workspaceId: ws.id, token: created.callback_token, id: created.id, slug };
}

function post(token: string, body: unknown, provider = "sandbox") {
  return http("POST", `/v1/provider/${provider}/${token}`, { body });
}

async function rows<T>(sql: string, params: unknown[]): Promise<T[]> {
  return (await db().query(sql, params)) as T[];
}

async function insertOutbound(workspaceId: string, connectionId: string, status = "submitted"): Promise<string> {
  const id = newId("msg");
  await db().query(
    `INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, body, provider_message_id)
     VALUES ($1, $2, $3, 'outbound', $4, '"+15550002222"', 'hi', 'prov-1')`,
    [id, workspaceId, connectionId, status],
  );
  return id;
}

function statusReport(messageId: string, status: string, extra: Record<string, unknown> = {}) {
  return { type: "message.status", event_id: eventId(), message_id: messageId, status, timestamp: new Date().toISOString(), ...extra };
}

describe("provider callbacks", () => {
  it("answers 404 for an unknown token, another provider's name or a deleted connection", async () => {
    const c = await setup();
    const report = { type: "connection.state", event_id: eventId(), state: "disconnected" };
    expect((await post("not-a-token", report)).status).to.equal(404);
    const wrongProvider = await post(c.token, report, "vendorx");
    expect(wrongProvider.status).to.equal(404);
    expect(wrongProvider.json.code).to.equal("not_found");
    expect((await post(c.token, { ...report, event_id: eventId() })).status).to.equal(202);
    await expectOk(c.client.connections.delete({ params: { connection: c.slug } }));
    expect((await post(c.token, { ...report, event_id: eventId() })).status).to.equal(404);
  });

  it("checks the token before the body: an unknown token or provider is 404 whatever was sent", async () => {
    const c = await setup();
    const bodies: { body?: unknown; raw?: string }[] = [
      { body: { type: "message.teleported" } },
      { raw: "{not json" },
      { raw: '{"type":"connection.state","type":"connection.state"}' },
      { body: {} },
    ];
    for (const init of bodies) {
      for (const path of [`/v1/provider/sandbox/not-a-token`, `/v1/provider/vendorx/${c.token}`]) {
        const res = await http("POST", path, init);
        expect(res.status, `${path} ${JSON.stringify(init)}`).to.equal(404);
        expect(res.json.code).to.equal("not_found");
      }
    }
  });

  it("acknowledges a known token's unrecognised or malformed payload with 202, ignored and stored nowhere", async () => {
    const c = await setup();
    const bad: { body?: unknown; raw?: string }[] = [
      { body: { type: "connection.state", state: "connected" } },
      { body: { type: "connection.state", event_id: eventId(), state: "confused" } },
      { body: { type: "message.teleported", event_id: eventId() } },
      { body: { type: "connection.state", event_id: eventId(), state: "connected", extra: 1 } },
      { body: { type: "message.status", event_id: eventId(), message_id: "msg_x", status: "read", timestamp: "yesterday" } },
      { body: { type: "message.inbound", event_id: eventId(), provider_message_id: "p", from: "+1", timestamp: new Date().toISOString() } },
      { body: { type: "message.inbound", event_id: eventId(), provider_message_id: "p", from: "+15550001111", body: "a\u0000b", timestamp: new Date().toISOString() } },
      { raw: "{not json" },
      { raw: `{"type":"connection.state","event_id":"${eventId()}","state":"connected","state":"disconnected"}` },
    ];
    for (const init of bad) {
      const res = await http("POST", `/v1/provider/sandbox/${c.token}`, init);
      expect(res.status, JSON.stringify(init)).to.equal(202);
      expect(res.json).to.deep.equal({ accepted: false });
    }
    const [{ n } = { n: -1 }] = await rows<{ n: number }>(
      `SELECT (SELECT count(*) FROM provider_callbacks WHERE connection_id = $1) + (SELECT count(*) FROM messages WHERE connection_id = $1)::int AS n`,
      [c.id],
    );
    expect(Number(n)).to.equal(0);
    const [connection] = await rows<{ state: string }>(`SELECT state FROM connections WHERE id = $1`, [c.id]);
    expect(connection!.state).to.not.equal("connected");
  });

  it("logs an ignored payload at debug level with the request id, the refused fields and no values", async function () {
    this.timeout(60_000);
    const c = await setup();
    const child = await startChildGateway({ LOG_LEVEL: "debug", DISPATCHER: "off" });
    try {
      const secret = `secret-${randomBytes(6).toString("hex")}`;
      const res = await fetch(`${child.url}/v1/provider/sandbox/${c.token}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": `req-${randomBytes(6).toString("hex")}` },
        body: JSON.stringify({ type: "message.inbound", event_id: eventId(), provider_message_id: "p", from: secret, timestamp: "yesterday" }),
      });
      expect(res.status).to.equal(202);
      const requestId = res.headers.get("x-request-id")!;
      const line = await waitFor(
        async () => child.output().split("\n").find((l) => l.includes(requestId) && l.includes("provider callback ignored")),
        (l) => l !== undefined,
        5_000,
      );
      const entry = JSON.parse(line!) as { level: number; request_id: string; refused: string[] };
      expect(entry.level).to.equal(20); // pino's debug
      expect(entry.request_id).to.equal(requestId);
      expect(entry.refused).to.include("body.timestamp");
      expect(child.output()).to.not.contain(secret).and.not.contain(c.token);
    } finally {
      await child.terminate();
    }
  });

  it("applies a batch in order in one go: receipts, a repeat inside it and a redelivery of it change nothing twice", async () => {
    const c = await setup();
    const first = await insertOutbound(c.workspaceId, c.id);
    const second = await insertOutbound(c.workspaceId, c.id);
    const sent = statusReport(first, "sent");
    const batch = {
      events: [
        sent,
        statusReport(first, "delivered"),
        { ...sent }, // the same event_id again: a redelivery within the batch
        statusReport(second, "delivered"),
        statusReport(first, "read"),
        statusReport(first, "delivered"), // late: history, not a move backwards
      ],
    };
    const res = await post(c.token, batch);
    expect(res.status).to.equal(202);
    expect(res.json).to.deep.equal({ accepted: true });
    const statuses = await rows<{ id: string; status: string }>(`SELECT id, status FROM messages WHERE id = ANY($1)`, [[first, second]]);
    expect(Object.fromEntries(statuses.map((r) => [r.id, r.status]))).to.deep.equal({ [first]: "read", [second]: "delivered" });
    const timeline = await rows<{ status: string; detail: string | null }>(`SELECT status, detail FROM message_timeline WHERE message_id = $1 ORDER BY id`, [first]);
    expect(timeline).to.deep.equal([
      { status: "sent", detail: null },
      { status: "delivered", detail: null },
      { status: "read", detail: null },
      { status: "delivered", detail: "late report" },
    ]);
    const events = await rows<{ type: string }>(
      `SELECT type FROM events WHERE payload->'data'->>'id' = $1 ORDER BY created_at, id`,
      [first],
    );
    expect(events.map((e) => e.type)).to.deep.equal(["message.sent", "message.delivered", "message.read"]);
    // The whole batch again: every event_id is known, nothing changes.
    const again = await post(c.token, batch);
    expect(again.json).to.deep.equal({ accepted: false });
    expect(await rows(`SELECT 1 FROM message_timeline WHERE message_id = $1`, [first])).to.have.length(4);
  });

  it("takes 1 to 500 events in a batch, and applies nothing from a batch with one bad event", async () => {
    const c = await setup();
    const id = await insertOutbound(c.workspaceId, c.id);
    // Outside the wire format: acknowledged and ignored (docs/engines.md, "The callback wire format"), never partly applied.
    const ignored = { status: 202, json: { accepted: false } };
    expect(await post(c.token, { events: [] })).to.deep.include(ignored);
    const tooMany = Array.from({ length: 501 }, () => statusReport(id, "sent"));
    expect(await post(c.token, { events: tooMany })).to.deep.include(ignored);
    const bad = await post(c.token, { events: [statusReport(id, "sent"), { type: "connection.state", event_id: eventId(), state: "confused" }] });
    expect(bad).to.deep.include(ignored);
    expect((await rows<{ status: string }>(`SELECT status FROM messages WHERE id = $1`, [id]))[0]!.status).to.equal("submitted");
    const full = await post(c.token, { events: tooMany.slice(0, 500) });
    expect(full.status).to.equal(202);
    expect(await rows(`SELECT 1 FROM provider_callbacks WHERE connection_id = $1`, [c.id])).to.have.length(500);
  });

  it("stores an inbound message from the sandbox with its timeline, a message.received event and the usage count", async () => {
    const c = await setup();
    const phone = uniquePhone();
    await pairConnection(c.client, c.slug, phone);
    const from = uniquePhone();
    const sent = await sandbox("POST", "/inbound", { to: phone, from, body: "hello there", location: { latitude: 52.5, longitude: 13.4 } });
    expect(sent.status).to.equal(202);
    const [message] = await waitFor(
      () => rows<Record<string, unknown>>(`SELECT * FROM messages WHERE connection_id = $1`, [c.id]),
      (r) => r.length === 1,
    );
    expect(message).to.include({ direction: "inbound", status: "delivered", sender: from, body: "hello there", provider_message_id: sent.json.provider_message_id });
    expect(message!.recipient).to.equal(phone);
    expect(message!.location).to.deep.equal({ latitude: 52.5, longitude: 13.4 });
    const timeline = await rows<{ status: string }>(`SELECT status FROM message_timeline WHERE message_id = $1`, [message!.id]);
    expect(timeline.map((t) => t.status)).to.deep.equal(["delivered"]);
    const [event] = await rows<{ payload: { type: string; connection: string; data: Record<string, unknown> } }>(
      `SELECT payload FROM events WHERE connection_id = $1 AND type = 'message.received'`,
      [c.id],
    );
    expect(event!.payload).to.include({ type: "message.received", connection: c.slug });
    expect(event!.payload.data).to.include({ id: message!.id, object: "message", direction: "inbound", from, to: phone, body: "hello there", context_sensitivity: "normal" });
    expect(event!.payload.data).to.deep.include({ context: {}, metadata: {}, error: null, media: null, location: { latitude: 52.5, longitude: 13.4, title: null } });
    const [usage] = await rows<{ n: number }>(`SELECT COALESCE(sum(messages_inbound), 0)::int AS n FROM usage_daily WHERE workspace_id = $1`, [c.workspaceId]);
    expect(usage!.n).to.equal(1);
  });

  it("files a group message under the group", async () => {
    const c = await setup();
    const phone = uniquePhone();
    await pairConnection(c.client, c.slug, phone);
    expect((await sandbox("POST", "/inbound", { to: phone, from: uniquePhone(), group: "group-123@g", body: "to all" })).status).to.equal(202);
    const [message] = await waitFor(() => rows<{ recipient: unknown }>(`SELECT recipient FROM messages WHERE connection_id = $1`, [c.id]), (r) => r.length === 1);
    expect(message!.recipient).to.deep.equal({ group: "group-123@g" });
  });

  it("records an inbound message with an empty body and nothing else, but starts no AI run for it; one character does", async () => {
    const ws = await newWorkspace("pro");
    const { key } = await ws.key(["connections:read", "connections:write", "ai:read", "ai:write"]);
    const auth = { authorization: `Bearer ${key}` };
    const slug = `cb-${randomBytes(3).toString("hex")}`;
    const created = await http("POST", "/v1/connections", { headers: auth, body: { slug } });
    expect(created.status, created.text).to.equal(201);
    const [token, id] = [created.json.callback_token as string, created.json.id as string];
    const credential = await http("POST", "/v1/ai/credentials", { headers: auth, body: { provider: "vendortwo", label: "unused", api_key: "sk-unused", base_url: "http://127.0.0.1:9" } });
    expect(credential.status, credential.text).to.equal(201);
    const policy = await http("PUT", `/v1/ai/policies/${slug}`, {
      headers: auth,
      body: { credential_id: credential.json.id, enabled: true, mode: "draft", model: "m", system_instruction: "Be brief." },
    });
    expect(policy.status, policy.text).to.equal(200);
    const inbound = (from: string, body: string) =>
      post(token, { type: "message.inbound", event_id: eventId(), provider_message_id: `p-${randomBytes(4).toString("hex")}`, from, body, timestamp: new Date().toISOString() });
    const debounced = () => rows<{ contact: string }>(`SELECT contact FROM ai_debounce WHERE connection_id = $1`, [id]);

    expect((await inbound("+15550005555", "")).status).to.equal(202);
    expect(await rows(`SELECT body FROM messages WHERE connection_id = $1 AND sender = '+15550005555'`, [id])).to.have.length(1);
    expect(await debounced()).to.deep.equal([]);

    expect((await inbound("+15550006666", "x")).status).to.equal(202);
    expect(await debounced()).to.deep.equal([{ contact: "+15550006666" }]);
    // The run itself is ai-runs.test.ts's: this one stops here.
    await db().query(`DELETE FROM ai_debounce WHERE connection_id = $1`, [id]);
  });

  it("deduplicates a redelivered event: 202 accepted false and no second effect", async () => {
    const c = await setup();
    const report = {
      type: "message.inbound",
      event_id: eventId(),
      provider_message_id: "p-dup",
      from: "+15550003333",
      to: "+15550004444",
      body: "once",
      timestamp: new Date().toISOString(),
    };
    const first = await post(c.token, report);
    expect(first.status).to.equal(202);
    expect(first.json).to.deep.equal({ accepted: true });
    const second = await post(c.token, report);
    expect(second.status).to.equal(202);
    expect(second.json).to.deep.equal({ accepted: false });
    expect(await rows(`SELECT id FROM messages WHERE connection_id = $1`, [c.id])).to.have.length(1);
    expect(await rows(`SELECT id FROM events WHERE connection_id = $1 AND type = 'message.received'`, [c.id])).to.have.length(1);
  });

  it("deduplicates the sandbox's duplicated deliveries end to end", async () => {
    const c = await setup();
    const phone = uniquePhone();
    await pairConnection(c.client, c.slug, phone);
    await sandbox("POST", "/faults", { duplicate_callbacks: true });
    try {
      expect((await sandbox("POST", "/inbound", { to: phone, from: uniquePhone(), body: "twice posted" })).status).to.equal(202);
      await waitFor(
        () => rows<{ n: number }>(`SELECT count(*)::int AS n FROM provider_callbacks WHERE connection_id = $1`, [c.id]),
        (r) => r[0]!.n === 2, // the connect report and the inbound one
      );
      const pending = async () => (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM sandbox_callbacks WHERE connection_id = $1`, [c.id]))[0]!.n;
      await waitFor(pending, (n) => n === 0);
    } finally {
      await sandbox("POST", "/faults", { duplicate_callbacks: false });
    }
    expect(await rows(`SELECT id FROM messages WHERE connection_id = $1`, [c.id])).to.have.length(1);
  });

  it("moves the connection to disconnected on a sandbox logout, with its event", async () => {
    const c = await setup();
    const phone = uniquePhone();
    await pairConnection(c.client, c.slug, phone);
    expect((await sandbox("POST", "/logout", { phone })).status).to.equal(200);
    const gone = await waitForConnection(c.client, c.slug, (x) => x.state === "disconnected");
    expect(gone.phone).to.equal(phone);
    const events = await rows<{ type: string }>(`SELECT type FROM events WHERE connection_id = $1 ORDER BY created_at, id`, [c.id]);
    expect(events.map((e) => e.type)).to.deep.equal(["connection.connected", "connection.disconnected"]);
    const [row] = await rows<{ linked: boolean }>(`SELECT linked FROM connections WHERE id = $1`, [c.id]);
    expect(row!.linked).to.equal(false);
  });

  it("applies status reports forward only: a late delivered after read joins the timeline without lowering the status", async () => {
    const c = await setup();
    const id = await insertOutbound(c.workspaceId, c.id);
    expect((await post(c.token, statusReport(id, "sent", { provider_message_id: "prov-2" }))).json).to.deep.equal({ accepted: true });
    expect((await post(c.token, statusReport(id, "read"))).json).to.deep.equal({ accepted: true });
    const late = await post(c.token, statusReport(id, "delivered"));
    expect(late.status).to.equal(202);
    expect(late.json).to.deep.equal({ accepted: true });
    const [message] = await rows<{ status: string; provider_message_id: string }>(`SELECT status, provider_message_id FROM messages WHERE id = $1`, [id]);
    expect(message).to.deep.equal({ status: "read", provider_message_id: "prov-2" });
    const timeline = await rows<{ status: string; detail: string | null }>(`SELECT status, detail FROM message_timeline WHERE message_id = $1 ORDER BY id`, [id]);
    expect(timeline.map((t) => t.status)).to.deep.equal(["sent", "read", "delivered"]);
    expect(timeline[2]!.detail).to.match(/late/);
    const events = await rows<{ type: string }>(`SELECT type FROM events WHERE connection_id = $1 ORDER BY created_at, id`, [c.id]);
    expect(events.map((e) => e.type)).to.deep.equal(["message.sent", "message.read"]);
    // failed after read is no move and no history: ignored
    expect((await post(c.token, statusReport(id, "failed", { error: { code: "x", message: "y" } }))).json).to.deep.equal({ accepted: false });
  });

  it("records a failure with its error, and ignores reports about unknown or inbound messages", async () => {
    const c = await setup();
    const id = await insertOutbound(c.workspaceId, c.id, "submitted");
    await post(c.token, statusReport(id, "failed", { error: { code: "not_on_network", message: "+15550002222 is not on the network" } }));
    const [message] = await rows<{ status: string; error_code: string; error_message: string }>(`SELECT status, error_code, error_message FROM messages WHERE id = $1`, [id]);
    expect(message).to.deep.equal({ status: "failed", error_code: "not_on_network", error_message: "+15550002222 is not on the network" });
    const [event] = await rows<{ payload: { data: { error: unknown; status: string } } }>(`SELECT payload FROM events WHERE connection_id = $1 AND type = 'message.failed'`, [
      c.id,
    ]);
    expect(event!.payload.data).to.deep.include({ status: "failed", error: { code: "not_on_network", message: "+15550002222 is not on the network" } });
    expect((await post(c.token, statusReport("msg_unknown", "sent"))).json).to.deep.equal({ accepted: false });
    // a message of another connection is unknown here
    const other = await setup();
    const foreign = await insertOutbound(other.workspaceId, other.id);
    expect((await post(c.token, statusReport(foreign, "sent"))).json).to.deep.equal({ accepted: false });
    expect((await rows<{ status: string }>(`SELECT status FROM messages WHERE id = $1`, [foreign]))[0]!.status).to.equal("submitted");
    // an inbound message of this connection is not ours to report on
    const inbound = await insertOutbound(c.workspaceId, c.id, "delivered");
    await db().query(`UPDATE messages SET direction = 'inbound' WHERE id = $1`, [inbound]);
    expect((await post(c.token, statusReport(inbound, "read"))).json).to.deep.equal({ accepted: false });
    expect((await rows<{ status: string }>(`SELECT status FROM messages WHERE id = $1`, [inbound]))[0]!.status).to.equal("delivered");
  });
});
