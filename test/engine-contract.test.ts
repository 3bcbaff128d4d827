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
import { liveSocket, pairBaileys, uniqueLid } from "./support/baileys.js";
import { pairConnection, sandbox, uniquePhone, waitForConnection } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const digits = (phone: string) => phone.replace(/\D/g, "");

/** How a test plays the network and the people on it for one engine. */
interface EngineDriver {
  name: string;
  /** Creates the connection, pairs it by QR as a person does, and returns it connected. */
  pair(client: Client, slug: string, phone: string): Promise<Connection>;
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
}

const sandboxDriver: EngineDriver = {
  name: "sandbox",
  pair: (client, slug, phone) => pairConnection(client, slug, phone),
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
};

const baileysDriver: EngineDriver = {
  name: "baileys",
  async pair(client, slug, phone) {
    const { connection } = await pairBaileys(client, slug, phone);
    await liveSocket(connection.id, (s) => s.user !== undefined);
    return connection;
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
};

for (const driver of [sandboxDriver, baileysDriver]) {
  describe(`engine contract: ${driver.name}`, function () {
    this.timeout(60_000);
    let client: Client;
    let connection: Connection;
    let slug: string;

    before(async () => {
      const ws = await newWorkspace();
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
}
