// Webhook delivery end to end: real HTTP receivers on 127.0.0.1 (allowed by the test gateway's
// WEBHOOK_ALLOW_PRIVATE=127.0.0.0/8) get events made the way users make them (a sandbox inbound
// message, sends through a paired sandbox connection) and verify every signature with the SDK's
// verifyWebhook. The test gateway runs with WEBHOOK_TIMEOUT_MS=1500 and WEBHOOK_RETRY_SCHEDULE=
// 0.5,0.5,1 (test/setup.ts): one attempt and three retries, each about a second apart.
import { expect } from "chai";
import type { DataSource } from "typeorm";
import type { WebhookDelivery } from "../contract/index.js";
import { expectOk, verifyWebhook, type WebhookEventPayload } from "../sdk/src/index.js";
import { eventValues, insertEvents } from "../server/events/record.js";
import { encrypt } from "../server/secrets.js";
import { newId } from "../server/ids.js";
import { payloadBody, retryAfterMs, retryDelayMs, RETRY_AFTER_MAX_MS, RETRY_JITTER, RETRY_SCHEDULE_MS, type FailedAttempt } from "../server/webhooks/delivery.js";
import { EVENTS_CHANNEL } from "../server/webhooks/fanout.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type Client, type TestWorkspace } from "./support/actors.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { sleep, waitFor } from "./support/wait.js";
import { Receiver, type Received } from "./support/webhook-receiver.js";

const db = (): DataSource => testEnv().gateway.ctx.db;

/** Verifies a received request as a receiver would, with the SDK helper; returns the event. */
function verified(r: Received, secret: string): WebhookEventPayload {
  return verifyWebhook({ payload: r.body, headers: r.headers as Record<string, string>, secret });
}

interface Setup {
  ws: TestWorkspace;
  client: Client;
  slug: string;
  phone: string;
}

const SCOPES = ["messages:read", "messages:write", "connections:read", "connections:write", "webhooks:read", "webhooks:write"] as const;

async function connected(slug = "desk"): Promise<Setup> {
  const ws = await newWorkspace();
  const { client } = await ws.key([...SCOPES]);
  const phone = uniquePhone();
  await pairConnection(client, slug, phone);
  return { ws, client, slug, phone };
}

async function inbound(to: string, body = "hello"): Promise<void> {
  const res = await sandbox("POST", "/inbound", { to, from: uniquePhone(), body });
  expect(res.status, JSON.stringify(res.json)).to.be.oneOf([200, 202]);
}

async function deliveries(client: Client, endpointId: string): Promise<WebhookDelivery[]> {
  return (await expectOk(client.webhooks.listDeliveries({ params: { id: endpointId }, query: { limit: 100 } }))).data;
}

async function waitForDelivery(client: Client, endpointId: string, predicate: (d: WebhookDelivery) => boolean, timeoutMs = 20_000): Promise<WebhookDelivery> {
  const list = await waitFor(() => deliveries(client, endpointId), (l) => l.some(predicate), timeoutMs, 100);
  return list.find(predicate)!;
}

describe("webhook delivery", function () {
  this.timeout(60_000);
  const receivers: Receiver[] = [];
  async function receiver(port?: number): Promise<Receiver> {
    const r = await Receiver.start(port);
    receivers.push(r);
    return r;
  }
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
  });

  describe("events reach a receiver, signed", () => {
    let setup: Setup;
    let hook: Receiver;
    let endpoint: { id: string; secret: string };
    before(async () => {
      setup = await connected();
      hook = await receiver();
      endpoint = await expectOk(
        setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received", "message.delivered", "message.failed"] } }),
      );
    });

    it("message.received: an inbound message, with the documented headers and the payload as stored", async () => {
      await inbound(setup.phone, "hi there");
      const [r] = await waitFor(
        async () => hook.events("message.received"),
        (l) => l.length > 0,
      );
      const event = verified(r!, endpoint.secret);
      expect(event.type).to.equal("message.received");
      expect(event.connection).to.equal(setup.slug);
      expect(event.id).to.match(/^evt_/);
      expect((event.data as { body: string }).body).to.equal("hi there");
      expect(Object.keys(event)).to.deep.equal(["id", "type", "created_at", "connection", "data"]);

      expect(r!.headers["content-type"]).to.equal("application/json");
      expect(r!.headers["svc-event-id"]).to.equal(event.id);
      expect(r!.headers["svc-event-type"]).to.equal("message.received");
      const t = r!.headers["svc-timestamp"] as string;
      expect(t).to.match(/^\d+$/);
      expect(Math.abs(Number(t) - Date.now() / 1000)).to.be.lessThan(30);
      expect(r!.headers["svc-signature"]).to.match(new RegExp(`^t=${t},v1=[0-9a-f]{64}$`));

      const [stored] = (await db().query(`SELECT payload FROM events WHERE id = $1`, [event.id])) as { payload: Record<string, unknown> }[];
      expect(JSON.parse(r!.body)).to.deep.equal(stored!.payload);
      expect(r!.body).to.equal(payloadBody(stored!.payload));

      // A wrong secret, a changed body and a stale timestamp are all refused by the same helper.
      expect(() => verifyWebhook({ payload: r!.body, headers: r!.headers as Record<string, string>, secret: "whsec_wrong" })).to.throw();
      expect(() => verifyWebhook({ payload: r!.body.replace("hi there", "hi therE"), headers: r!.headers as Record<string, string>, secret: endpoint.secret })).to.throw();
      expect(() => verifyWebhook({ payload: r!.body, headers: r!.headers as Record<string, string>, secret: endpoint.secret, now: Number(t) + 301 })).to.throw();

      const delivery = await waitForDelivery(setup.client, endpoint.id, (d) => d.event_id === event.id && d.status === "succeeded");
      expect(delivery).to.include({ object: "webhook_delivery", endpoint_id: endpoint.id, event_type: "message.received", attempt_count: 1, next_attempt_at: null });
      expect(delivery.attempts).to.have.length(1);
      expect(delivery.attempts[0]).to.include({ trigger: "initial", status_code: 200, error_code: null, error: null });
      expect(delivery.attempts[0]!.latency_ms).to.be.a("number").at.least(0);
    });

    it("message.delivered: a send through the paired sandbox connection", async () => {
      const to = uniquePhone();
      const sent = await expectOk(setup.client.messages.send({ body: { connection: setup.slug, to, body: "delivered please" } }));
      const [r] = await waitFor(
        async () => hook.events("message.delivered").filter((e) => (e.event.data as { id: string }).id === sent.id),
        (l) => l.length > 0,
      );
      const event = verified(r!, endpoint.secret);
      expect(event.connection).to.equal(setup.slug);
      expect(event.data).to.include({ id: sent.id, status: "delivered" });
      // Only subscribed types arrive: the message's queued, sent and read events do not.
      const types = new Set(hook.events().map((e) => e.event.type));
      expect([...types].every((t) => ["message.received", "message.delivered", "message.failed"].includes(t))).to.equal(true);
    });

    it("message.failed: a send to a number that is not on the network", async () => {
      const offNetwork = uniquePhone("+1558");
      expect((await sandbox("POST", "/numbers", { phone: offNetwork, on_network: false })).status).to.be.oneOf([200, 201, 204]);
      const sent = await expectOk(setup.client.messages.send({ body: { connection: setup.slug, to: offNetwork, body: "nobody home" } }));
      const [r] = await waitFor(
        async () => hook.events("message.failed").filter((e) => (e.event.data as { id: string }).id === sent.id),
        (l) => l.length > 0,
      );
      const event = verified(r!, endpoint.secret);
      expect(event.data).to.include({ id: sent.id, status: "failed" });
    });

    it("delivers each event once, and fanning an event out again adds nothing", async () => {
      await inbound(setup.phone, "once only");
      const [r] = await waitFor(
        async () => hook.events("message.received").filter((e) => (e.event.data as { body: string }).body === "once only"),
        (l) => l.length > 0,
      );
      const eventId = verified(r!, endpoint.secret).id;
      // Reset by hand, which no statement that records an event does: the fan-out is told, as
      // those statements tell it (else it finds the event at its 10 s fallback poll).
      await db().query(`UPDATE events SET fanned_out_at = NULL WHERE id = $1`, [eventId]);
      await db().query(`SELECT pg_notify($1, '')`, [EVENTS_CHANNEL]);
      await waitFor(
        async () => (await db().query(`SELECT fanned_out_at FROM events WHERE id = $1`, [eventId])) as { fanned_out_at: Date | null }[],
        (rows) => rows[0]!.fanned_out_at !== null,
      );
      await sleep(500);
      const [{ n }] = (await db().query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = $1`, [eventId])) as [{ n: number }];
      expect(n).to.equal(1);
      const copies = hook.received.filter((x) => x.headers["svc-event-id"] === eventId);
      expect(copies).to.have.length(1);
      // Across everything this receiver got: no event twice.
      const ids = hook.received.map((x) => x.headers["svc-event-id"]);
      expect(new Set(ids).size).to.equal(ids.length);
    });
  });

  describe("retries", () => {
    let setup: Setup;
    before(async () => {
      setup = await connected();
    });

    it("retries after 500s with the same body and event id, each attempt signed and recorded", async () => {
      const hook = await receiver();
      hook.answer = (n) => (n <= 2 ? 500 : 204);
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
      await inbound(setup.phone, "flaky receiver");
      const delivery = await waitForDelivery(setup.client, endpoint.id, (d) => d.status === "succeeded");
      expect(delivery.attempt_count).to.equal(3);
      expect(delivery.attempts.map((a) => [a.trigger, a.status_code, a.error_code])).to.deep.equal([
        ["initial", 500, "http_status"],
        ["retry", 500, "http_status"],
        ["retry", 204, null],
      ]);
      expect(delivery.attempts[0]!.error).to.equal("HTTP 500");
      expect(hook.received).to.have.length(3);
      const bodies = new Set(hook.received.map((r) => r.body));
      expect(bodies.size).to.equal(1);
      for (const r of hook.received) expect(verified(r, endpoint.secret).id).to.equal(delivery.event_id);
      // The retries came about the configured 0.5 s (±20 %) after the failures, through Agenda.
      expect(hook.received[1]!.at - hook.received[0]!.at).to.be.at.least(350);
    });

    it("retries after a timeout", async () => {
      const hook = await receiver();
      hook.answer = (n) => (n === 1 ? "hang" : 200);
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
      await inbound(setup.phone, "slow receiver");
      const delivery = await waitForDelivery(setup.client, endpoint.id, (d) => d.status === "succeeded");
      expect(delivery.attempts.map((a) => [a.trigger, a.status_code, a.error_code])).to.deep.equal([
        ["initial", null, "timeout"],
        ["retry", 200, null],
      ]);
      expect(delivery.attempts[0]!.latency_ms).to.be.within(1400, 5000);
      expect(delivery.attempts[0]!.error).to.equal("no response within 1500 ms");
    });

    it("waits as long as a receiver's Retry-After asks before retrying", async () => {
      const hook = await receiver();
      hook.answer = (n) => (n === 1 ? { status: 503, headers: { "Retry-After": "3" } } : 204);
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
      await inbound(setup.phone, "busy receiver");
      const delivery = await waitForDelivery(setup.client, endpoint.id, (d) => d.status === "succeeded");
      expect(delivery.attempts.map((a) => [a.trigger, a.status_code])).to.deep.equal([
        ["initial", 503],
        ["retry", 204],
      ]);
      // The schedule alone would retry after about 0.5 s.
      expect(hook.received[1]!.at - hook.received[0]!.at).to.be.at.least(2_900);
    });

    it("loses nothing while the receiver is down: connection refused until it starts", async () => {
      const probe = await Receiver.start();
      const port = probe.port;
      await probe.close();
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: `http://127.0.0.1:${port}/hook`, events: ["message.received"] } }));
      await inbound(setup.phone, "while down");
      const failed = await waitForDelivery(setup.client, endpoint.id, (d) => d.attempt_count >= 1);
      expect(failed.attempts[0]).to.include({ error_code: "connection_refused", status_code: null });
      expect(failed.status).to.equal("pending");
      expect(failed.next_attempt_at).to.be.a("string");
      const hook = await receiver(port);
      const delivery = await waitForDelivery(setup.client, endpoint.id, (d) => d.status === "succeeded");
      expect(hook.events("message.received")).to.have.length(1);
      expect(delivery.attempts.at(-1)).to.include({ status_code: 200, trigger: "retry" });
    });

    it("fails after the last retry; a resend delivers it again, audited; 409 while an attempt is in flight", async () => {
      const hook = await receiver();
      let healthy = false;
      hook.answer = () => (healthy ? 200 : 503);
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
      await inbound(setup.phone, "never accepted");
      const failed = await waitForDelivery(setup.client, endpoint.id, (d) => d.status === "failed");
      expect(failed.attempt_count).to.equal(4);
      expect(failed.attempts.map((a) => a.trigger)).to.deep.equal(["initial", "retry", "retry", "retry"]);
      expect(failed.next_attempt_at).to.equal(null);
      expect(failed.completed_at).to.be.a("string");
      await sleep(1500);
      expect(hook.received).to.have.length(4);

      healthy = true;
      const resent = await setup.client.webhooks.resendDelivery({ params: { id: endpoint.id, deliveryId: failed.id } });
      expect(resent.status).to.equal(202);
      expect(resent.body).to.include({ id: failed.id, status: "pending" });
      const done = await waitForDelivery(setup.client, endpoint.id, (d) => d.id === failed.id && d.status === "succeeded");
      expect(done.attempts.at(-1)).to.include({ trigger: "manual", status_code: 200 });
      expect(hook.received).to.have.length(5);
      expect(new Set(hook.received.map((r) => r.headers["svc-event-id"])).size).to.equal(1);

      const [entry] = (await db().query(`SELECT action, target_id, details FROM audit_log WHERE workspace_id = $1 AND action = 'webhook_delivery.resent'`, [
        setup.ws.id,
      ])) as { target_id: string; details: Record<string, unknown> }[];
      expect(entry!.target_id).to.equal(failed.id);
      expect(entry!.details).to.deep.include({ endpoint_id: endpoint.id, previous_status: "failed" });

      // In flight: the receiver holds the request; a resend must wait for its outcome.
      hook.answer = () => "hang";
      const before = hook.received.length;
      expect((await setup.client.webhooks.resendDelivery({ params: { id: endpoint.id, deliveryId: failed.id } })).status).to.equal(202);
      await waitFor(async () => hook.received.length, (n) => n > before);
      const busy = await setup.client.webhooks.resendDelivery({ params: { id: endpoint.id, deliveryId: failed.id } });
      expect(busy.status).to.equal(409);
      hook.answer = () => 200;
      await waitForDelivery(setup.client, endpoint.id, (d) => d.id === failed.id && d.status === "succeeded" && d.attempts.length >= 7);

      // Unknown ids and another endpoint's delivery are 404.
      const other = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.sent"] } }));
      expect((await setup.client.webhooks.resendDelivery({ params: { id: other.id, deliveryId: failed.id } })).status).to.equal(404);
      expect((await setup.client.webhooks.resendDelivery({ params: { id: endpoint.id, deliveryId: "del_unknown" } })).status).to.equal(404);
    });

    it("cancels pending deliveries when the endpoint is deleted", async () => {
      const hook = await receiver();
      hook.answer = () => 500;
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
      await inbound(setup.phone, "to a doomed endpoint");
      await waitFor(async () => hook.received.length, (n) => n >= 1);
      await expectOk(setup.client.webhooks.delete({ params: { id: endpoint.id } }));
      const seen = hook.received.length;
      await sleep(2500);
      expect(hook.received.length).to.be.at.most(seen + 1);
      const [row] = (await db().query(`SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id])) as { status: string }[];
      expect(row!.status).to.equal("canceled");
    });
  });

  describe("connection pinning and URL safety at delivery", () => {
    it("an endpoint scoped to one connection never receives another connection's events", async () => {
      const ws = await newWorkspace();
      const { client } = await ws.key([...SCOPES]);
      const phoneA = uniquePhone();
      const phoneB = uniquePhone();
      await pairConnection(client, "conn-a", phoneA);
      await pairConnection(client, "conn-b", phoneB);
      const scoped = await receiver();
      const all = await receiver();
      const a = await expectOk(client.webhooks.create({ body: { url: scoped.url, events: ["message.received"], connection: "conn-a" } }));
      const everything = await expectOk(client.webhooks.create({ body: { url: all.url, events: ["message.received"] } }));
      await inbound(phoneB, "for b");
      await inbound(phoneA, "for a");
      await inbound(phoneB, "for b again");
      await waitFor(async () => all.events("message.received").length, (n) => n === 3);
      await waitFor(async () => scoped.events("message.received").length, (n) => n === 1);
      await sleep(500);
      const got = scoped.events("message.received").map((r) => verified(r, a.secret));
      expect(got.map((e) => [e.connection, (e.data as { body: string }).body])).to.deep.equal([["conn-a", "for a"]]);
      expect(all.events().map((r) => verified(r, everything.secret).connection).sort()).to.deep.equal(["conn-a", "conn-b", "conn-b"]);
      const [{ n }] = (await db().query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [a.id])) as [{ n: number }];
      expect(n).to.equal(1);
    });

    it("checks the URL again at every delivery: an address refused now is never contacted", async () => {
      const setup = await connected("rechecked");
      // Registered before the policy refused it (inserted directly): delivery must refuse it anyway.
      const id = newId("whe");
      await db().query(
        `INSERT INTO webhook_endpoints (id, workspace_id, url, events, secret_sealed) VALUES ($1, $2, 'https://10.20.30.40/hook', ARRAY['message.received'], $3)`,
        [id, setup.ws.id, encrypt(testEnv().gateway.ctx.config.secretKey, "whsec_test")],
      );
      await inbound(setup.phone, "to a private address");
      const delivery = await waitForDelivery(setup.client, id, (d) => d.attempt_count >= 1);
      expect(delivery.attempts[0]).to.include({ status_code: null, error_code: "blocked" });
      expect(delivery.attempts[0]!.error).to.include("10.20.30.40");
    });
  });

  describe("events no endpoint matches", () => {
    /** Whether an event of `type` on `connectionId` is written fanned out already by the statement every recorder uses (read before it commits: no fan-out has seen it). */
    async function writtenFannedOut(workspaceId: string, type: string, connectionId: string | null): Promise<boolean> {
      return db().transaction(async (em) => {
        const id = newId("evt");
        const [row] = (await em.query(
          `${insertEvents(eventValues(1))} RETURNING fanned_out_at`,
          [id, workspaceId, type, connectionId, "{}", new Date()],
        )) as { fanned_out_at: Date | null }[];
        // Gone before the commit: the probe leaves nothing for the fan-out.
        await em.query(`DELETE FROM events WHERE id = $1`, [id]);
        return row!.fanned_out_at !== null;
      });
    }

    it("are written fanned out already; an event some endpoint matches is left to the fan-out", async () => {
      const ws = await newWorkspace();
      const { client } = await ws.key([...SCOPES]);
      const a = await pairConnection(client, "mark-a", uniquePhone());
      const b = await pairConnection(client, "mark-b", uniquePhone());
      // No endpoint at all.
      expect(await writtenFannedOut(ws.id, "message.received", a.id)).to.equal(true);
      const hook = await receiver();
      await expectOk(client.webhooks.create({ body: { url: hook.url, events: ["message.received"], connection: "mark-a" } }));
      // The type it subscribes, on its connection: the fan-out's; on another connection, or on none, or another type: nobody's.
      expect(await writtenFannedOut(ws.id, "message.received", a.id)).to.equal(false);
      expect(await writtenFannedOut(ws.id, "message.received", b.id)).to.equal(true);
      expect(await writtenFannedOut(ws.id, "message.received", null)).to.equal(true);
      expect(await writtenFannedOut(ws.id, "message.sent", a.id)).to.equal(true);
      // Another workspace's endpoint matches nothing here.
      const other = await newWorkspace();
      expect(await writtenFannedOut(other.id, "message.received", a.id)).to.equal(true);
      // An endpoint for every connection; deleted, it matches nothing any more.
      const everywhere = await expectOk(client.webhooks.create({ body: { url: hook.url, events: ["message.sent"] } }));
      expect(await writtenFannedOut(ws.id, "message.sent", b.id)).to.equal(false);
      expect(await writtenFannedOut(ws.id, "message.sent", null)).to.equal(false);
      await expectOk(client.webhooks.delete({ params: { id: everywhere.id } }));
      expect(await writtenFannedOut(ws.id, "message.sent", b.id)).to.equal(true);
    });
  });

  describe("the delivery log", () => {
    it("pages newest first with a cursor bound to its filters", async () => {
      const setup = await connected("paged");
      const hook = await receiver();
      const endpoint = await expectOk(setup.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
      for (let i = 0; i < 5; i++) await inbound(setup.phone, `page ${i}`);
      await waitFor(() => deliveries(setup.client, endpoint.id), (l) => l.length === 5 && l.every((d) => d.status === "succeeded"));
      const first = await expectOk(setup.client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { limit: 2 } }));
      expect(first.data).to.have.length(2);
      expect(first.next_cursor).to.be.a("string");
      const second = await expectOk(setup.client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { limit: 2, cursor: first.next_cursor! } }));
      const third = await expectOk(setup.client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { limit: 2, cursor: second.next_cursor! } }));
      expect(third.next_cursor).to.equal(null);
      const ids = [...first.data, ...second.data, ...third.data].map((d) => d.id);
      expect(ids).to.have.length(5);
      expect([...ids].sort().reverse()).to.deep.equal(ids);
      const filtered = await setup.client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { limit: 2, status: "failed", cursor: first.next_cursor! } });
      expect(filtered.status).to.equal(400);
      expect((await expectOk(setup.client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { status: "failed" } }))).data).to.deep.equal([]);
      expect((await setup.client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { limit: 101 } })).status).to.equal(400);
    });
  });
});

describe("webhook retry schedule", () => {
  it("is the documented schedule: 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h, then failed", () => {
    expect(RETRY_SCHEDULE_MS).to.deep.equal([10e3, 60e3, 300e3, 1800e3, 7200e3, 21600e3, 43200e3, 86400e3]);
    expect(retryDelayMs(9)).to.equal(undefined);
    expect(retryDelayMs(0)).to.equal(undefined);
  });

  it("jitters each delay within ±20 %", () => {
    RETRY_SCHEDULE_MS.forEach((base, i) => {
      expect(retryDelayMs(i + 1, { random: () => 0 })).to.equal(Math.round(base * (1 - RETRY_JITTER)));
      expect(retryDelayMs(i + 1, { random: () => 0.999999 })).to.be.closeTo(base * (1 + RETRY_JITTER), base * 1e-6 + 1);
      for (let k = 0; k < 50; k++) expect(retryDelayMs(i + 1)).to.be.within(base * 0.8 - 1, base * 1.2 + 1);
    });
  });

  it("backs off twice as far after a 429 or a timeout, and not further after a 500 or a refused connection", () => {
    const at = (failure: FailedAttempt, step = 2) => retryDelayMs(step, { failure, random: () => 0.5 });
    expect(at({ statusCode: 500, errorCode: "http_status" })).to.equal(60e3);
    expect(at({ statusCode: null, errorCode: "connection_refused" })).to.equal(60e3);
    expect(at({ statusCode: 429, errorCode: "http_status" })).to.equal(120e3);
    expect(at({ statusCode: null, errorCode: "timeout" })).to.equal(120e3);
    // Still bounded by the schedule: the last step's failure is final whatever the cause.
    expect(at({ statusCode: 429, errorCode: "http_status" }, 9)).to.equal(undefined);
  });

  it("honours Retry-After on a 429 or 503, in seconds or as a date, never sooner than the step and at most 24 h", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    const at = (statusCode: number, retryAfter: string) => retryDelayMs(1, { failure: { statusCode, errorCode: "http_status", retryAfter }, random: () => 0.5, nowMs: now });
    expect(at(503, "120")).to.equal(120e3);
    expect(at(429, "120")).to.equal(120e3);
    expect(at(503, "Thu, 01 Jan 2026 00:05:00 GMT")).to.equal(300e3);
    // Sooner than the step (10 s) or in the past: the step's delay.
    expect(at(503, "2")).to.equal(10e3);
    expect(at(503, "Wed, 31 Dec 2025 23:00:00 GMT")).to.equal(10e3);
    expect(at(429, "1")).to.equal(20e3);
    // The longest honoured wait is 24 h: the last valid value, and the first past it.
    expect(at(503, String(RETRY_AFTER_MAX_MS / 1000))).to.equal(RETRY_AFTER_MAX_MS);
    expect(at(503, String(RETRY_AFTER_MAX_MS / 1000 + 1))).to.equal(RETRY_AFTER_MAX_MS);
    // Not a delay nor a date, or on another status: the schedule alone.
    expect(at(503, "soon")).to.equal(10e3);
    expect(at(500, "120")).to.equal(10e3);
    expect(retryAfterMs(" 7 ", now)).to.equal(7e3);
    expect(retryAfterMs("soon", now)).to.equal(undefined);
  });

  it("delivers a receiver down for an hour: the retries before the eighth span more than an hour", () => {
    const cumulative = RETRY_SCHEDULE_MS.slice(0, 5).reduce((a, b) => a + b, 0) * (1 - RETRY_JITTER);
    expect(cumulative).to.be.greaterThan(3600e3);
  });

  it("orders the body's top-level keys as documented", () => {
    const body = payloadBody({ data: { a: 1 }, id: "evt_1", connection: "c", type: "message.sent", created_at: "t" });
    expect(body).to.equal('{"id":"evt_1","type":"message.sent","created_at":"t","connection":"c","data":{"a":1}}');
  });
});
