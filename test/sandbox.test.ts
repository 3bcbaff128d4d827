// The sandbox engine: its control API (validation, 404s, faults), the engine calls the dispatcher
// makes (send with its dedupe and receipts, number check), its callback outbox's retries, and
// its absence when the sandbox is disabled.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { DataSource } from "typeorm";
import { expectOk } from "../sdk/src/index.js";
import { compose, composeApp } from "../server/compose.js";
import { loadConfig } from "../server/config.js";
import { engineConnectionFor } from "../server/connections/service.js";
import { Connection } from "../server/connections/entities.js";
import { EngineError, EngineRegistry, type OutboundMessage } from "../server/engines/engine.js";
import { SandboxEngine, sandboxControl } from "../server/engines/sandbox/index.js";
import { CallbackOutbox } from "../server/engines/sandbox/outbox.js";
import { newId } from "../server/ids.js";
import { testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { sleep, waitFor } from "./support/wait.js";

const db = (): DataSource => testEnv().gateway.ctx.db;
const engine = (): SandboxEngine => testEnv().gateway.ctx.engines.get("sandbox") as SandboxEngine;

/** A connected sandbox connection, with what the engine interface needs to address it. */
async function linked() {
  const ws = await newWorkspace();
  const { client } = await ws.key(["connections:read", "connections:write"]);
  const slug = `sbx-${randomBytes(3).toString("hex")}`;
  const phone = uniquePhone();
  const view = await pairConnection(client, slug, phone);
  const row = await db().getRepository(Connection).findOneByOrFail({ id: view.id });
  return { ws, client, slug, phone, row, conn: engineConnectionFor(testEnv().gateway.ctx.config, row) };
}

function outbound(to: OutboundMessage["to"], body = "hi"): OutboundMessage {
  return { messageId: newId("msg"), to, body, media: null, location: null };
}

/** Outbound message rows, so the receipts the sandbox reports have something to move. */
async function insertMessage(m: OutboundMessage, workspaceId: string, connectionId: string): Promise<void> {
  await db().query(
    `INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, body) VALUES ($1, $2, $3, 'outbound', 'submitting', $4::jsonb, $5)`,
    [m.messageId, workspaceId, connectionId, JSON.stringify(m.to), m.body],
  );
}

async function statusOf(id: string): Promise<{ status: string; error_code: string | null }> {
  return ((await db().query(`SELECT status, error_code FROM messages WHERE id = $1`, [id])) as { status: string; error_code: string | null }[])[0]!;
}

const NO_FAULTS = { fail_next_sends: 0, latency_ms: 0, duplicate_callbacks: false };

describe("sandbox engine", () => {
  // Faults are network-wide: start and leave every test with none.
  beforeEach(() => sandbox("POST", "/faults", NO_FAULTS));
  afterEach(() => sandbox("POST", "/faults", NO_FAULTS));

  describe("control API", () => {
    it("declares numbers, with defaults and validation", async () => {
      const phone = uniquePhone();
      const declared = await sandbox("POST", "/numbers", { phone });
      expect(declared.status).to.equal(200);
      expect(declared.json).to.deep.equal({ phone, on_network: true, receipts: "read", group_add: "allow" });
      expect((await sandbox("POST", "/numbers", { phone, on_network: false, receipts: "none" })).json).to.include({ on_network: false, receipts: "none" });
      for (const body of [{}, { phone: "123" }, { phone, receipts: "seen" }, { phone, on_network: "no" }, { phone, group_add: "maybe" }, { phone, extra: true }]) {
        const res = await sandbox("POST", "/numbers", body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.json.code).to.equal("validation_failed");
      }
    });

    it("sets faults within their limits; absent fields keep their value", async () => {
      expect((await sandbox("POST", "/faults", { fail_next_sends: 2, latency_ms: 60_000 })).json).to.deep.equal({
        fail_next_sends: 2,
        latency_ms: 60_000,
        duplicate_callbacks: false,
      });
      expect((await sandbox("POST", "/faults", {})).json).to.deep.equal({ fail_next_sends: 2, latency_ms: 60_000, duplicate_callbacks: false });
      expect((await sandbox("POST", "/faults", { duplicate_callbacks: true })).json).to.deep.include({ fail_next_sends: 2, duplicate_callbacks: true });
      for (const body of [{ latency_ms: 60_001 }, { latency_ms: -1 }, { fail_next_sends: -1 }, { fail_next_sends: 1.5 }, { duplicate_callbacks: "yes" }, { chaos: 1 }]) {
        expect((await sandbox("POST", "/faults", body)).status, JSON.stringify(body)).to.equal(400);
      }
      expect((await sandbox("GET", "/faults")).json).to.deep.include({ fail_next_sends: 2 });
    });

    it("answers problem+json 404s for unknown payloads, unlinked numbers and unknown routes", async () => {
      const nobody = uniquePhone("+1558");
      for (const [path, body] of [
        ["/scan", { payload: "svc-sandbox-pair:never-issued", phone: nobody }],
        ["/inbound", { to: nobody, from: uniquePhone(), body: "hello?" }],
        ["/logout", { phone: nobody }],
        ["/teleport", {}],
      ] as const) {
        const res = await sandbox("POST", path, body);
        expect(res.status, path).to.equal(404);
        expect(res.json).to.include({ code: "not_found", status: 404 });
      }
      expect((await sandbox("POST", "/inbound", { to: nobody, from: uniquePhone() })).status).to.equal(400);
      // An empty body is no body, as on sends: 400 before the number is looked up (one character is a 404 above).
      const empty = await sandbox("POST", "/inbound", { to: nobody, from: uniquePhone(), body: "" });
      expect(empty.status, JSON.stringify(empty.json)).to.equal(400);
      expect((await sandbox("POST", "/inbound", { to: nobody, from: uniquePhone(), body: "x" })).status).to.equal(404);
      expect((await sandbox("POST", "/inbound", { to: nobody, from: uniquePhone(), body: "x".repeat(4097) })).status).to.equal(400);
      expect((await sandbox("POST", "/inbound", { to: nobody, from: uniquePhone(), body: "x".repeat(4096) })).status).to.equal(404);
      expect((await sandbox("POST", "/phone-send", { from: nobody, to: uniquePhone(), body: "" })).status).to.equal(400);
      expect((await sandbox("GET", "/received")).status).to.equal(400);
      expect((await sandbox("GET", `/received?to=${encodeURIComponent(nobody)}`)).json).to.deep.equal({ data: [] });
    });
  });

  describe("engine calls", () => {
    it("delivers once per message id, lists what a contact received oldest first, and reports the receipts", async () => {
      const c = await linked();
      const to = uniquePhone();
      const first = outbound(to, "first");
      const second = outbound({ phone: to }, "second");
      await insertMessage(first, c.ws.id, c.row.id);
      await insertMessage(second, c.ws.id, c.row.id);
      const a = await engine().send(c.conn, first);
      expect(a.providerMessageId).to.match(/^sbx_msg_/);
      // a retried hand-off: same provider id, nothing delivered twice
      expect((await engine().send(c.conn, first)).providerMessageId).to.equal(a.providerMessageId);
      await engine().send(c.conn, second);
      const received = await sandbox("GET", `/received?to=${encodeURIComponent(to)}`);
      expect(received.json.data!.map((d) => d.body)).to.deep.equal(["first", "second"]);
      expect(received.json.data![0]).to.include({ message_id: first.messageId, provider_message_id: a.providerMessageId, from: c.phone });
      const timeline = await waitFor(
        async () => (await db().query(`SELECT status FROM message_timeline WHERE message_id = $1 ORDER BY id`, [first.messageId])) as { status: string }[],
        (t) => t.length === 3,
      );
      expect(timeline.map((t) => t.status)).to.deep.equal(["sent", "delivered", "read"]);
      expect((await statusOf(first.messageId)).status).to.equal("read");
    });

    it("follows the contact's receipts, and fails sends to numbers off the network", async () => {
      const c = await linked();
      const quiet = uniquePhone();
      const offline = uniquePhone();
      await sandbox("POST", "/numbers", { phone: quiet, receipts: "delivered" });
      await sandbox("POST", "/numbers", { phone: offline, on_network: false });
      const m1 = outbound(quiet);
      const m2 = outbound(offline);
      await insertMessage(m1, c.ws.id, c.row.id);
      await insertMessage(m2, c.ws.id, c.row.id);
      await engine().send(c.conn, m1);
      await engine().send(c.conn, m2);
      await waitFor(() => statusOf(m1.messageId), (m) => m.status === "delivered");
      expect(await waitFor(() => statusOf(m2.messageId), (m) => m.status === "failed")).to.deep.equal({ status: "failed", error_code: "not_on_network" });
      await sleep(200);
      expect((await statusOf(m1.messageId)).status).to.equal("delivered");
      expect((await sandbox("GET", `/received?to=${encodeURIComponent(offline)}`)).json.data).to.deep.equal([]);
    });

    it("fails the next sends on demand with a transient error, and delays calls by latency_ms", async () => {
      const c = await linked();
      // The failures are network-wide: the test gateway's dispatcher, handing off what earlier
      // tests of this worker left queued, would take some of them.
      const { dispatcher } = testEnv().gateway.ctx;
      await dispatcher.stop();
      try {
        await sandbox("POST", "/faults", { fail_next_sends: 2 });
        for (let i = 0; i < 2; i++) {
          const err = await engine().send(c.conn, outbound(uniquePhone())).then(() => null, (e: unknown) => e);
          expect(err).to.be.instanceOf(EngineError);
          expect((err as EngineError).permanent).to.equal(false);
        }
      } finally {
        dispatcher.start();
      }
      expect((await sandbox("GET", "/faults")).json.fail_next_sends).to.equal(0);
      await engine().send(c.conn, outbound(uniquePhone()));
      await sandbox("POST", "/faults", { latency_ms: 300 });
      const started = Date.now();
      await engine().checkNumber(c.conn, uniquePhone());
      expect(Date.now() - started).to.be.at.least(290);
    });

    it("answers the number check from declarations while connected, and checked false otherwise", async () => {
      const c = await linked();
      const off = uniquePhone();
      await sandbox("POST", "/numbers", { phone: off, on_network: false });
      expect(await engine().checkNumber(c.conn, off)).to.deep.equal({ checked: true, onNetwork: false });
      expect(await engine().checkNumber(c.conn, uniquePhone())).to.deep.equal({ checked: true, onNetwork: true });
      await expectOk(c.client.connections.suspend({ params: { connection: c.slug } }));
      expect(await engine().checkNumber(c.conn, off)).to.deep.equal({ checked: false, onNetwork: null });
      await expectOk(c.client.connections.resume({ params: { connection: c.slug } }));
      await sandbox("POST", "/logout", { phone: c.phone });
      expect(await engine().checkNumber(c.conn, off)).to.deep.equal({ checked: false, onNetwork: null });
      const sent = await engine().send(c.conn, outbound(off)).then(() => null, (e: unknown) => e);
      expect(sent).to.be.instanceOf(EngineError);
    });

    it("holds a suspended session's reports until it resumes", async () => {
      const c = await linked();
      await expectOk(c.client.connections.suspend({ params: { connection: c.slug } }));
      expect((await sandbox("POST", "/inbound", { to: c.phone, from: uniquePhone(), body: "while away" })).status).to.equal(202);
      await sleep(400);
      const count = async () => ((await db().query(`SELECT count(*)::int AS n FROM messages WHERE connection_id = $1`, [c.row.id])) as { n: number }[])[0]!.n;
      expect(await count()).to.equal(0);
      await expectOk(c.client.connections.resume({ params: { connection: c.slug } }));
      await waitFor(count, (n) => n === 1);
    });
  });

  describe("receipts applied in process", () => {
    const count = async (sql: string, params: unknown[]) => ((await db().query(sql, params)) as { n: number }[])[0]!.n;

    it("applies a send's receipts with no callback row and no dedupe row", async () => {
      const c = await linked();
      const before = await count(`SELECT count(*)::int AS n FROM provider_callbacks WHERE connection_id = $1`, [c.row.id]);
      const m = outbound(uniquePhone());
      await insertMessage(m, c.ws.id, c.row.id);
      await engine().send(c.conn, m);
      expect(await count(`SELECT count(*)::int AS n FROM sandbox_callbacks WHERE connection_id = $1`, [c.row.id])).to.equal(0);
      await waitFor(() => statusOf(m.messageId), (s) => s.status === "read");
      const timeline = (await db().query(`SELECT status FROM message_timeline WHERE message_id = $1 ORDER BY id`, [m.messageId])) as { status: string }[];
      expect(timeline.map((t) => t.status)).to.deep.equal(["sent", "delivered", "read"]);
      expect(await count(`SELECT count(*)::int AS n FROM provider_callbacks WHERE connection_id = $1`, [c.row.id])).to.equal(before);
    });

    it("applies the receipts a process that died left unapplied, once", async () => {
      const c = await linked();
      const m = outbound(uniquePhone());
      await insertMessage(m, c.ws.id, c.row.id);
      await db().query(`UPDATE messages SET status = 'sent' WHERE id = $1`, [m.messageId]);
      // What a process leaves that died after the hand-off and the first receipt: its delivery, a
      // minute old, and the message at `sent`.
      await db().query(
        `INSERT INTO sandbox_deliveries (message_id, provider_message_id, connection_id, to_address, recipient, outcome, reports, created_at)
         VALUES ($1, 'sbx_msg_left', $2, $3, $4::jsonb, 'delivered', '{sent,delivered,read}', now() - interval '1 minute')`,
        [m.messageId, c.row.id, m.to, JSON.stringify(m.to)],
      );
      await waitFor(() => statusOf(m.messageId), (s) => s.status === "read", 25_000);
      await sleep(11_000); // a further sweep: it finds nothing owed
      const timeline = (await db().query(`SELECT status FROM message_timeline WHERE message_id = $1 ORDER BY id`, [m.messageId])) as { status: string }[];
      expect(timeline.map((t) => t.status)).to.deep.equal(["delivered", "read"]);
    }).timeout(60_000);

    it("hands the receipts it has not applied to the callback outbox when it closes", async () => {
      const c = await linked();
      const m = outbound(uniquePhone());
      await insertMessage(m, c.ws.id, c.row.id);
      await engine().send(c.conn, m);
      await engine().close();
      try {
        expect(await count(`SELECT count(*)::int AS n FROM sandbox_callbacks WHERE connection_id = $1`, [c.row.id])).to.equal(3);
      } finally {
        await engine().open();
      }
      await waitFor(() => statusOf(m.messageId), (s) => s.status === "read");
      expect(await count(`SELECT count(*)::int AS n FROM message_timeline WHERE message_id = $1`, [m.messageId])).to.equal(3);
    });
  });

  describe("callback outbox", () => {
    let server: Server | undefined;
    // The gateway's own poller stands aside; each test posts with an outbox of its own. (It assumes
    // no other gateway process polls this database meanwhile: another poller would find no such
    // connection and drop the rows.)
    beforeEach(() => engine().close());
    afterEach(async () => {
      if (server) await new Promise((resolve) => server!.close(resolve));
      server = undefined;
      await engine().open();
    });

    /**
     * The gateway's callback route as a stand-in: `answer` gets each post's connection (the URL's
     * last part) and event ids and gives its status. Answers the base URL, to which the
     * connection's id is appended.
     */
    async function receiver(answer: (connection: string, events: string[]) => number | Promise<number>): Promise<string> {
      server = createServer((req, res) => {
        let text = "";
        req.on("data", (d: Buffer) => (text += d.toString()));
        req.on("end", () => {
          void (async () => {
            const events = (JSON.parse(text) as { events: { event_id: string }[] }).events.map((e) => e.event_id);
            const status = await answer(req.url!.slice("/cb/".length), events);
            res.writeHead(status, { "content-type": "application/json" }).end("{}");
          })();
        });
      });
      await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb/`;
    }

    /** Queues a connection.state report of `connection` for each event id, due now, in this order. */
    async function queueReports(connection: string, eventIds: string[]): Promise<void> {
      await db().query(
        `INSERT INTO sandbox_callbacks (connection_id, kind, event, due_at)
         SELECT $1, 'connection.state', jsonb_build_object('type', 'connection.state', 'event_id', e.id, 'state', 'connected'), now()
           FROM unnest($2::text[]) WITH ORDINALITY AS e(id, n) ORDER BY e.n`,
        [connection, eventIds],
      );
    }

    /** Posts the reports of `connections` to `base` with an outbox of the test's own until `done`, then stops it. */
    async function postUntil(base: string, connections: string[], done: () => boolean): Promise<void> {
      const outbox = new CallbackOutbox(db(), testEnv().gateway.ctx.logger, async (id) => (connections.includes(id) ? base + id : null));
      outbox.start();
      try {
        await waitFor(async () => done(), (d) => d, 15_000);
      } finally {
        await outbox.stop();
      }
    }

    const left = async (connections: string[]) =>
      ((await db().query(`SELECT count(*)::int AS n FROM sandbox_callbacks WHERE connection_id = ANY($1)`, [connections])) as { n: number }[])[0]!.n;

    it("posts a connection's reports together in order, retries them until acknowledged, without holding up other connections", async () => {
      // The stand-in fails A's first two posts.
      const [a, b] = [newId("con"), newId("con")];
      const seen: { connection: string; status: number; events: string[] }[] = [];
      const base = await receiver((connection, events) => {
        const status = connection === a && seen.filter((s) => s.connection === a).length < 2 ? 503 : 202;
        seen.push({ connection, status, events });
        return status;
      });
      await queueReports(a, ["a1", "a2"]);
      await queueReports(b, ["b1"]);
      await postUntil(base, [a, b], () => seen.filter((s) => s.status === 202).length === 2);
      const posts = (id: string) => seen.filter((s) => s.connection === id).map((s) => [s.status, ...s.events]);
      expect(posts(a)).to.deep.equal([
        [503, "a1", "a2"],
        [503, "a1", "a2"],
        [202, "a1", "a2"],
      ]);
      expect(posts(b)).to.deep.equal([[202, "b1"]]);
      // B was not held up behind A's retries.
      expect(seen.findIndex((s) => s.connection === b)).to.be.lessThan(seen.findLastIndex((s) => s.connection === a));
      expect(await left([a, b])).to.equal(0);
    });

    it("passes no report of a connection ahead of one of its reports waiting to be retried", async () => {
      // A's first post fails; a3 arrives meanwhile, due at once: it must wait behind a1 and a2.
      const a = newId("con");
      const acknowledged: string[] = [];
      let posts = 0;
      const base = await receiver(async (_connection, events) => {
        if (++posts === 1) {
          await queueReports(a, ["a3"]);
          return 503;
        }
        acknowledged.push(...events);
        return 202;
      });
      await queueReports(a, ["a1", "a2"]);
      await postUntil(base, [a], () => acknowledged.length === 3);
      expect(acknowledged).to.deep.equal(["a1", "a2", "a3"]);
    });

    it("drops only the report the gateway refuses when it is in a batch", async () => {
      const id = newId("con");
      const seen: { status: number; events: string[] }[] = [];
      const base = await receiver((_connection, events) => {
        const status = events.includes("bad") ? 400 : 202;
        seen.push({ status, events });
        return status;
      });
      await queueReports(id, ["c1", "bad", "c2"]);
      await postUntil(base, [id], () => seen.length === 4);
      expect(seen.map((s) => [s.status, ...s.events])).to.deep.equal([
        [400, "c1", "bad", "c2"],
        [202, "c1"],
        [400, "bad"],
        [202, "c2"],
      ]);
      expect(await left([id])).to.equal(0);
    });
  });

  describe("when disabled", () => {
    it("is never enabled in production", () => {
      const config = loadConfig({
        NODE_ENV: "production",
        DATABASE_URL: "postgres://x@localhost/x",
        SECRET_KEY: randomBytes(32).toString("base64"),
        BASE_URL: "https://gw.example.com",
        SMTP_URL: "smtp://mail.example.com",
      });
      expect(config.sandboxEnabled).to.equal(false);
      const engines = new EngineRegistry();
      engines.register(engine());
      expect(sandboxControl(config, engines)).to.equal(null);
    });

    it("mounts no control API", async () => {
      const { ctx } = testEnv().gateway;
      const app = composeApp(compose({ ...ctx, config: { ...ctx.config, sandboxEnabled: false } }, ctx.services.providerCallbacks), { unavailable: async () => [] });
      const listener = app.listen(0, "127.0.0.1");
      await new Promise((resolve) => listener.once("listening", resolve));
      try {
        const base = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
        for (const [method, path] of [
          ["GET", "/sandbox/v1/faults"],
          ["POST", "/sandbox/v1/scan"],
          ["GET", "/sandbox/v1/received?to=%2B15550001111"],
        ]) {
          const res = await fetch(base + path!, { method, headers: { "content-type": "application/json" }, body: method === "POST" ? "{}" : undefined });
          expect(res.status, path).to.equal(404);
          expect(((await res.json()) as { detail: string }).detail).to.match(/No such route/);
        }
      } finally {
        await new Promise((resolve) => listener.close(resolve));
      }
    });
  });
});
