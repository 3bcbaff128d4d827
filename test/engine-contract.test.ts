// The engine contract, written once and run against every engine: the sandbox (driven through
// its control API) and Baileys (driven through the stand-in socket, which plays the network with
// the library's event shapes). What a user of the API sees must not depend on the engine: pairing
// by QR, a send reaching the network at the recipient's address, receipts moving the status,
// inbound messages, and a contact known only by LID answered at that address. What only one
// engine can show (the network refusing a client version) runs where it can and says why not.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { Connection, Message } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { standIn } from "./support/baileys-stand-in.js";
import { createBaileysConnection, liveSocket, pairBaileys, uniqueLid } from "./support/baileys.js";
import { codeOf, pairConnection, sandbox, uniquePhone, waitForConnection } from "./support/sandbox.js";
import { sleep, waitFor } from "./support/wait.js";

const digits = (phone: string) => phone.replace(/\D/g, "");

/** How a test plays the network and the people on it for one engine. */
interface EngineDriver {
  name: string;
  /** Creates the connection, pairs it by QR as a person does, and returns it connected. */
  pair(client: Client, slug: string, phone: string): Promise<Connection>;
  /** Creates a connection on the engine (not paired). */
  create(client: Client, slug: string): Promise<Connection>;
  /** The phone of `phone` types `code` under "Link with phone number". */
  enterCode(connection: Connection, code: string, phone: string): Promise<void>;
  /** `from` writes `body` to the linked number. */
  inbound(connection: Connection, from: string, body: string): Promise<void>;
  /** The network's copy of what the gateway wrote to `to` (its text), once it has it. */
  receivedBy(connection: Connection, to: string): Promise<string[]>;
  /** The recipient's devices acknowledge the message: delivered, then read. */
  acknowledge(connection: Connection, message: Message): Promise<void>;
  /** A LID address the engine's network knows a contact by. */
  lidAddress(): string;
  /** The network refuses the client version: null when the engine has none to refuse. */
  refuseVersion: ((connection: Connection) => Promise<() => void>) | null;
  /** The network restricts the linked account (until `until`, or until lifted), or lifts the restriction. */
  restrict(connection: Connection, active: boolean, until?: Date): Promise<void>;
}

const sandboxDriver: EngineDriver = {
  name: "sandbox",
  pair: (client, slug, phone) => pairConnection(client, slug, phone),
  create: (client, slug) => expectOk(client.connections.create({ body: { slug } })),
  async enterCode(_connection, code, phone) {
    expect((await sandbox("POST", "/enter-code", { code, phone })).status).to.equal(200);
  },
  async inbound(connection, from, body) {
    const res = await sandbox("POST", "/inbound", { to: connection.phone, from, body });
    expect(res.status).to.equal(202);
  },
  async receivedBy(_connection, to) {
    const res = await sandbox("GET", `/received?to=${encodeURIComponent(to)}`);
    return (res.json.data ?? []).map((r) => String(r.body));
  },
  // The sandbox's contacts acknowledge by themselves (declared receipts: read).
  async acknowledge() {},
  lidAddress: () => `lid:${uniqueLid()}`,
  refuseVersion: null,
  async restrict(connection, active, until) {
    const res = await sandbox("POST", "/restrict", { phone: connection.phone, active, ...(until && { until: until.toISOString() }) });
    expect(res.status).to.equal(200);
  },
};

const baileysDriver: EngineDriver = {
  name: "baileys",
  async pair(client, slug, phone) {
    const { connection } = await pairBaileys(client, slug, phone);
    await liveSocket(connection.id, (s) => s.user !== undefined);
    return connection;
  },
  async create(client, slug) {
    // The stand-in rotates codes every second; a person takes longer, and the code they read must
    // still be the newest when they type it.
    standIn.world.qrIntervalMs = 30_000;
    return createBaileysConnection(client, slug);
  },
  async enterCode(connection, code, phone) {
    try {
      expect((await liveSocket(connection.id)).enterCode(code, phone, uniqueLid())).to.equal(true);
    } finally {
      standIn.world.qrIntervalMs = 1_000;
    }
  },
  async inbound(connection, from, body) {
    const lid = from.startsWith("lid:") ? from.slice(4) : null;
    const remoteJid = lid ? `${lid}@lid` : `${digits(from)}@s.whatsapp.net`;
    const id = `IN${randomBytes(8).toString("hex").toUpperCase()}`;
    standIn.live(connection.id)!.emit("messages.upsert", { type: "notify", messages: [{ key: { id, remoteJid, fromMe: false }, message: { conversation: body }, messageTimestamp: Math.floor(Date.now() / 1000) }] });
  },
  async receivedBy(connection, to) {
    const lid = to.startsWith("lid:") ? to.slice(4) : null;
    const jid = lid ? `${lid}@lid` : `${digits(to)}@s.whatsapp.net`;
    return standIn
      .socketsOf(connection.id)
      .flatMap((s) => s.calls)
      .filter((c) => c.method === "sendMessage" && c.args[0] === jid)
      .map((c) => String((c.args[1] as { text?: string }).text));
  },
  async acknowledge(connection, message) {
    const socket = standIn.live(connection.id)!;
    const jid = typeof message.to === "string" && message.to.startsWith("lid:") ? `${message.to.slice(4)}@lid` : `${digits(String(message.to))}@s.whatsapp.net`;
    socket.receipt(jid, message.provider_message_id!, 2);
    socket.receipt(jid, message.provider_message_id!, 3);
    socket.receipt(jid, message.provider_message_id!, 4);
  },
  lidAddress: () => `lid:${uniqueLid()}`,
  async refuseVersion(connection) {
    standIn.world.acceptedVersion = [2, 3000, 999];
    standIn.world.publishedVersion = null;
    standIn.live(connection.id)!.close(428);
    return () => {
      standIn.world.acceptedVersion = null;
      standIn.world.publishedVersion = [2, 3000, 1];
    };
  },
  async restrict(connection, active, until) {
    standIn.live(connection.id)!.restrict(active, until);
  },
};

for (const driver of [sandboxDriver, baileysDriver]) {
  describe(`engine contract: ${driver.name}`, function () {
    this.timeout(60_000);
    let client: Client;
    let connection: Connection;
    let slug: string;
    let ws: Awaited<ReturnType<typeof newWorkspace>>;

    before(async () => {
      ws = await newWorkspace();
      client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
      slug = `contract-${driver.name}-${randomBytes(3).toString("hex")}`;
      const phone = uniquePhone("+1556");
      connection = await driver.pair(client, slug, phone);
    });

    it("pairs by QR: the connection reads connected with the scanning phone's number", async () => {
      const c = await expectOk(client.connections.get({ params: { connection: slug } }));
      expect(c).to.include({ state: "connected", transport: driver.name, detail: null });
      expect(c.phone).to.equal(connection.phone);
    });

    const sendAndWait = async (to: string, body: string, status = "submitted") => {
      const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body } }));
      return waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (m) => m.provider_message_id !== null && (m.status === status || m.status === "read" || m.status === "delivered"), 15_000);
    };

    it("sends: the network has the message at the recipient's address, and receipts move it to read", async () => {
      const to = uniquePhone("+1556");
      const m = await sendAndWait(to, `contract send ${driver.name}`);
      await waitFor(() => driver.receivedBy(connection, to), (texts) => texts.includes(`contract send ${driver.name}`));
      await driver.acknowledge(connection, m);
      const read = await waitFor(() => expectOk(client.messages.get({ params: { id: m.id } })), (x) => x.status === "read");
      expect(read.status).to.equal("read");
    });

    it("records an inbound message with its sender and text", async () => {
      const from = uniquePhone("+1556");
      await driver.inbound(connection, from, `hello ${driver.name}`);
      const got = await waitFor(
        async () => (await expectOk(client.messages.list({ query: { connection: slug, limit: 50 } }))).data.find((m) => m.body === `hello ${driver.name}`),
        (m) => m !== undefined,
      );
      expect(got).to.include({ direction: "inbound", from });
    });

    it("answers a contact known only by LID at that same address", async () => {
      const lid = driver.lidAddress();
      await driver.inbound(connection, lid, `from a LID ${driver.name}`);
      const got = await waitFor(
        async () => (await expectOk(client.messages.list({ query: { connection: slug, limit: 50 } }))).data.find((m) => m.body === `from a LID ${driver.name}`),
        (m) => m !== undefined,
      );
      expect(got!.from).to.equal(lid);
      await sendAndWait(got!.from!, `reply to the LID ${driver.name}`);
      await waitFor(() => driver.receivedBy(connection, lid), (texts) => texts.includes(`reply to the LID ${driver.name}`));
    });

    it("pairs by code: the grant shows a code that the named phone types, and the connection reads connected with that number", async () => {
      const codeSlug = `code-${driver.name}-${randomBytes(3).toString("hex")}`;
      const created = await driver.create(client, codeSlug);
      const phone = uniquePhone("+1556");
      const grant = await expectOk(client.connections.pair({ params: { connection: codeSlug }, body: { method: "code", phone } }));
      const { code } = codeOf(await expectOk(client.connections.qr({ params: { connection: codeSlug, grantId: grant.grant_id } })));
      expect(code).to.match(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
      await driver.enterCode(created, code, phone);
      const c = await waitForConnection(client, codeSlug, (x) => x.state === "connected");
      expect(c).to.include({ phone, detail: null });
    });

    describe("account restriction", () => {
      let events: Client;
      before(async () => {
        events = (await ws.key(["webhooks:read"])).client;
      });

      /** What the network got for `to` and the message's status, after `ms` of a restriction. */
      const heldFor = async (to: string, body: string, ms: number) => {
        const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body } }));
        await sleep(ms);
        return { id: sent.id, message: await expectOk(client.messages.get({ params: { id: sent.id } })), network: await driver.receivedBy(connection, to) };
      };
      const released = (id: string) => waitFor(() => expectOk(client.messages.get({ params: { id } })), (m) => m.provider_message_id !== null, 20_000);

      it("pauses sending while the network restricts the account (queued, not failed), with connection.restricted and the detail, until it lifts", async () => {
        await driver.restrict(connection, true);
        const c = await waitForConnection(client, slug, (x) => x.detail === "account_restricted");
        expect(c.state).to.equal("connected");
        const recorded = await waitFor(
          async () => (await expectOk(events.events.list({ query: { limit: 100 } }))).data.filter((e) => e.type === "connection.restricted"),
          (e) => e.length > 0,
        );
        expect(recorded).to.have.length(1);
        expect(recorded[0]!.data).to.include({ slug, state: "connected", detail: "account_restricted" });

        const to = uniquePhone("+1556");
        const held = await heldFor(to, `held ${driver.name}`, 2_500);
        expect(held.message).to.include({ status: "queued", provider_message_id: null });
        expect(held.network).to.not.include(`held ${driver.name}`);

        await driver.restrict(connection, false);
        await released(held.id);
        await waitFor(() => driver.receivedBy(connection, to), (texts) => texts.includes(`held ${driver.name}`));
        expect((await expectOk(client.connections.get({ params: { connection: slug } }))).detail).to.equal(null);
      });

      it("resumes by itself when the restriction's end the network gave has passed", async () => {
        await driver.restrict(connection, true, new Date(Date.now() + 4_000));
        await waitForConnection(client, slug, (x) => x.detail === "account_restricted");
        const to = uniquePhone("+1556");
        const held = await heldFor(to, `until ${driver.name}`, 1_000);
        expect(held.message.status).to.equal("queued");
        await released(held.id);
        await waitFor(() => driver.receivedBy(connection, to), (texts) => texts.includes(`until ${driver.name}`));
      });

      it("resumes when an operator resumes the connection's sending", async () => {
        await driver.restrict(connection, true);
        await waitForConnection(client, slug, (x) => x.detail === "account_restricted");
        const to = uniquePhone("+1556");
        const held = await heldFor(to, `resumed ${driver.name}`, 1_000);
        expect(held.message.status).to.equal("queued");
        const resumed = await expectOk(client.connections.resume({ params: { connection: slug } }));
        expect(resumed).to.include({ state: "connected", detail: null });
        await released(held.id);
        await waitFor(() => driver.receivedBy(connection, to), (texts) => texts.includes(`resumed ${driver.name}`));
        // Resuming a connection that is connected and not restricted is still refused.
        const again = await client.connections.resume({ params: { connection: slug } });
        expect(again.status).to.equal(409);
      });
    });

    // Last: it leaves the connection disconnected.
    describe("client version", () => {
      it("never reads connected while the network refuses the client version", async function () {
        if (!driver.refuseVersion) return this.skip(); // the sandbox has no client version to refuse
        const restore = await driver.refuseVersion(connection);
        try {
          const c = await waitForConnection(client, slug, (x) => x.state !== "connected");
          expect(c).to.include({ state: "disconnected", detail: "client_version_refused" });
        } finally {
          restore();
        }
      });
    });
  });
}
