// The Baileys engine's own code driven through the stand-in socket (the live network cannot be
// reached from the test machines): pairing, auth state, sends and receipts, inbound, the phone's
// own messages, logout, reconnects, suspend/resume/delete, number checks and metrics, all through
// the real API, the real provider callback code and the real database.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { standIn, type StandInSocket } from "./support/baileys-stand-in.js";
import { baileysEngine, createBaileysConnection, liveSocket, pairBaileys, uniqueLid } from "./support/baileys.js";
import { codeOf, qrOf, uniquePhone, waitForConnection } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";
import { MAX_QR_ROTATIONS } from "../server/engines/baileys/session.js";
import { networkMessageId } from "../server/engines/baileys/translate.js";

const slugOf = (p: string) => `${p}-${randomBytes(3).toString("hex")}`;
const digits = (phone: string) => phone.replace(/\D/g, "");
const db = () => testEnv().gateway.ctx.db;

async function authRows(connectionId: string): Promise<{ kind: string; value_sealed: string }[]> {
  return db().query(`SELECT kind, value_sealed FROM baileys_auth WHERE connection_id = $1`, [connectionId]);
}

describe("Baileys engine (stand-in socket)", function () {
  this.timeout(60_000);
  let client: Client;

  before(async () => {
    const ws = await newWorkspace();
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
  });
  afterEach(() => {
    standIn.world.qrIntervalMs = 1_000;
    standIn.world.hangChecks = false;
  });

  describe("pairing", () => {
    it("shows the socket's latest QR when the grant is redeemed, and links the scanning phone", async () => {
      const slug = slugOf("bly-pair");
      const created = await createBaileysConnection(client, slug);
      expect(created.transport).to.equal("baileys");
      standIn.world.qrIntervalMs = 150;
      const grant = await expectOk(client.connections.pair({ params: { connection: slug } }));
      const socket = await liveSocket(created.id, (s) => s.qrs.length >= 2);
      const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: slug, grantId: grant.grant_id } })));
      // The rotation went on after the grant opened: the redeemed payload is a later QR than the first.
      expect(qr.payload).to.match(/^standin-qr:/);
      expect(socket.qrs.indexOf(qr.payload)).to.be.greaterThan(0);
      expect(qr.qr_svg).to.match(/^data:image\/svg\+xml;base64,/);
      // Single use, as with every engine.
      expect((await client.connections.qr({ params: { connection: slug, grantId: grant.grant_id } })).status).to.equal(404);
      const phone = uniquePhone("+1558");
      socket.scan(phone, uniqueLid());
      const connected = await waitForConnection(client, slug, (c) => c.state === "connected");
      expect(connected.phone).to.equal(phone);
      // The scan made the library restart: a second socket opened with the new credentials, no QR.
      const sockets = standIn.socketsOf(created.id);
      expect(sockets).to.have.length(2);
      expect(sockets[1]!.qrs).to.have.length(0);
    });

    it("pairs by phone-number code: asks the library for a code per QR rotation, shows the newest, links the phone that types it", async () => {
      const slug = slugOf("bly-code");
      const created = await createBaileysConnection(client, slug);
      standIn.world.qrIntervalMs = 150;
      const phone = uniquePhone("+1558");
      const grant = await expectOk(client.connections.pair({ params: { connection: slug }, body: { method: "code", phone } }));
      expect(grant.method).to.equal("code");
      const socket = await liveSocket(created.id, (s) => s.pairingCodes.length >= 2);
      const { code } = codeOf(await expectOk(client.connections.qr({ params: { connection: slug, grantId: grant.grant_id } })));
      // The library was asked for the number's digits, once per QR it rotated to.
      const asked = socket.calls.filter((c) => c.method === "requestPairingCode");
      expect(asked.length).to.be.at.least(2);
      for (const call of asked) expect(call.args).to.deep.equal([phone.slice(1)]);
      const issued = socket.pairingCodes.map((c) => `${c.code.slice(0, 4)}-${c.code.slice(4)}`);
      expect(issued.indexOf(code), "the redeemed code is a refreshed one").to.be.greaterThan(0);
      expect(socket.qrs.length).to.be.at.least(2);
      // Typed on the phone as the socket's newest code: the connection links as that number.
      const newest = socket.pairingCodes.at(-1)!.code;
      expect(socket.enterCode(newest, uniquePhone("+1559"), uniqueLid()), "another phone").to.equal(false);
      expect(socket.enterCode(newest, phone, uniqueLid())).to.equal(true);
      expect((await waitForConnection(client, slug, (c) => c.state === "connected")).phone).to.equal(phone);
    });

    it(`closes the socket after ${MAX_QR_ROTATIONS} unscanned QRs and leaves the connection pairable`, async () => {
      const slug = slugOf("bly-noscan");
      const created = await createBaileysConnection(client, slug);
      standIn.world.qrIntervalMs = 40;
      await expectOk(client.connections.pair({ params: { connection: slug } }));
      const disconnected = await waitForConnection(client, slug, (c) => c.state === "disconnected");
      expect(disconnected.phone).to.equal(null);
      const [socket] = standIn.socketsOf(created.id);
      // The last shown QR is the limit; the next rotation closed the socket.
      expect(socket!.qrs).to.have.length(MAX_QR_ROTATIONS + 1);
      expect(socket!.calls.some((c) => c.method === "end")).to.equal(true);
      standIn.world.qrIntervalMs = 1_000;
      await expectOk(client.connections.pair({ params: { connection: slug } }));
      expect(standIn.live(created.id)).to.not.equal(undefined);
    });
  });

  describe("auth state", () => {
    it("is sealed in PostgreSQL and reopens the session without a QR after the process restarts its engine", async () => {
      const slug = slugOf("bly-auth");
      const phone = uniquePhone("+1558");
      const { connection } = await pairBaileys(client, slug, phone);
      const stored = await authRows(connection.id);
      expect(stored.map((r) => r.kind)).to.include("creds");
      for (const r of stored) {
        expect(r.value_sealed).to.match(/^v1\./);
        expect(r.value_sealed).to.not.contain(digits(phone));
      }
      const engine = baileysEngine();
      await engine.close();
      expect(standIn.live(connection.id)).to.equal(undefined);
      await engine.open();
      const reopened = await liveSocket(connection.id, (s) => s.user !== undefined);
      expect(reopened.qrs).to.have.length(0);
      expect(reopened.user!.id).to.contain(digits(phone));
      expect((await expectOk(client.connections.get({ params: { connection: slug } }))).state).to.equal("connected");
    });
  });

  describe("sending", () => {
    let slug: string;
    let connectionId: string;
    let socket: StandInSocket;
    let media: Server;
    let mediaUrl: string;

    before(async () => {
      slug = slugOf("bly-send");
      ({ connection: { id: connectionId } } = await pairBaileys(client, slug, uniquePhone("+1558")));
      socket = await liveSocket(connectionId, (s) => s.user !== undefined);
      media = createServer((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from("89504e47", "hex")));
      await new Promise<void>((r) => media.listen(0, "127.0.0.1", r));
      mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/picture.png`;
    });
    after(() => media.close());

    async function sendAndWait(body: Record<string, unknown>, status = "submitted") {
      const sent = await expectOk(client.messages.send({ body: { connection: slug, ...body } as never }));
      return waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (m) => m.status === status, 15_000);
    }
    const callFor = (id: string) => socket.calls.find((c) => c.method === "sendMessage" && (c.args[2] as { messageId?: string })?.messageId === id);

    it("writes text to a phone under the network id derived from our message id", async () => {
      const to = uniquePhone("+1559");
      const m = await sendAndWait({ to, body: "hello from the gateway" });
      const expected = networkMessageId(testEnv().gateway.ctx.config.secretKey, m.id);
      expect(m.provider_message_id).to.equal(expected);
      const call = callFor(expected)!;
      expect(call.args[0]).to.equal(`${digits(to)}@s.whatsapp.net`);
      expect(call.args[1]).to.deep.equal({ text: "hello from the gateway" });
      // The message store answers the library when a recipient's device asks for a retry.
      expect(await socket.options.getMessage({ remoteJid: call.args[0] as string, fromMe: true, id: expected })).to.deep.equal({ conversation: "hello from the gateway" });
      expect(await socket.options.getMessage({ remoteJid: call.args[0] as string, fromMe: true, id: "3EB0UNKNOWN" })).to.equal(undefined);
    });

    it("writes to a group and sends a location", async () => {
      const g = await sendAndWait({ to: { group: "120363000000000001@g.us" }, body: "to the group" });
      expect(callFor(g.provider_message_id!)!.args[0]).to.equal("120363000000000001@g.us");
      const l = await sendAndWait({ to: uniquePhone("+1559"), location: { latitude: 52.52, longitude: 13.405, title: "Berlin" } });
      expect(callFor(l.provider_message_id!)!.args[1]).to.deep.equal({ location: { degreesLatitude: 52.52, degreesLongitude: 13.405, name: "Berlin" } });
    });

    it("fetches media through the address policy and sends it; a private address is refused", async () => {
      const ok = await sendAndWait({ to: uniquePhone("+1559"), body: "caption", media: { url: mediaUrl, kind: "image" } });
      const content = callFor(ok.provider_message_id!)!.args[1] as { image: Buffer; caption: string; mimetype: string };
      expect(Buffer.from(content.image).toString("hex")).to.equal("89504e47");
      expect(content).to.include({ caption: "caption", mimetype: "image/png" });
      // 10/8 is not in the test run's allow-list (only 127/8 is): refused before any connection.
      const refused = await sendAndWait({ to: uniquePhone("+1559"), media: { url: "https://10.1.2.3/secret.png" } }, "failed");
      expect(refused.error!.code).to.equal("media_url_refused");
      expect(socket.calls.filter((c) => c.method === "sendMessage").map((c) => (c.args[1] as Record<string, unknown>).image)).to.have.length.greaterThan(0);
    });

    it("moves the status with the server ack, the delivery and the read receipt, and fails on an error", async () => {
      const m = await sendAndWait({ to: uniquePhone("+1559"), body: "receipts" });
      const key = { remoteJid: (callFor(m.provider_message_id!)!.args[0] as string), fromMe: true, id: m.provider_message_id! };
      const statusOf = (s: string) => waitFor(() => expectOk(client.messages.get({ params: { id: m.id } })), (x) => x.status === s);
      socket.emit("messages.update", [{ key, update: { status: 2 } }]);
      await statusOf("sent");
      socket.emit("message-receipt.update", [{ key, receipt: { userJid: key.remoteJid, receiptTimestamp: 1_700_000_000 } }]);
      await statusOf("delivered");
      socket.emit("message-receipt.update", [{ key, receipt: { userJid: key.remoteJid, readTimestamp: 1_700_000_001 } }]);
      await statusOf("read");

      const f = await sendAndWait({ to: uniquePhone("+1559"), body: "will fail" });
      socket.emit("messages.update", [{ key: { remoteJid: "x@s.whatsapp.net", fromMe: true, id: f.provider_message_id }, update: { status: 0 } }]);
      const failed = await waitFor(() => expectOk(client.messages.get({ params: { id: f.id } })), (x) => x.status === "failed");
      expect(failed.error!.code).to.equal("network_error");
    });

    it("keeps the network's code of an error ack (463, 479) as the library passes it on", async () => {
      for (const [code, meaning] of [
        ["463", /account is restricted/],
        ["479", /invalid/],
        ["999", /error 999\.$/],
      ] as const) {
        const m = await sendAndWait({ to: uniquePhone("+1559"), body: `refused ${code}` });
        // The library's shape (messages-recv.js, an ack with an error attribute).
        socket.emit("messages.update", [{ key: { remoteJid: "x@s.whatsapp.net", fromMe: true, id: m.provider_message_id }, update: { status: 0, messageStubParameters: [code] } }]);
        const failed = await waitFor(() => expectOk(client.messages.get({ params: { id: m.id } })), (x) => x.status === "failed");
        expect(failed.error!.code).to.equal(`network_${code}`);
        expect(failed.error!.message).to.match(meaning);
      }
    });

    it("does not write a message twice when its hand-off is repeated", async () => {
      const m = await sendAndWait({ to: uniquePhone("+1559"), body: "once" });
      const engine = baileysEngine();
      const again = await engine.send({ id: connectionId, callbackUrl: "unused" }, { messageId: m.id, to: m.to as string, body: "once", media: null, location: null });
      expect(again.providerMessageId).to.equal(m.provider_message_id);
      expect(socket.calls.filter((c) => (c.args[2] as { messageId?: string } | undefined)?.messageId === m.provider_message_id)).to.have.length(1);
    });
  });

  describe("inbound and the phone's own messages", () => {
    let slug: string;
    let connectionId: string;
    let linked: string;
    let socket: StandInSocket;
    let n = 0;

    before(async () => {
      slug = slugOf("bly-in");
      linked = uniquePhone("+1558");
      ({ connection: { id: connectionId } } = await pairBaileys(client, slug, linked));
      socket = await liveSocket(connectionId, (s) => s.user !== undefined);
    });

    const now = () => Math.floor(Date.now() / 1000);
    const upsert = (key: Record<string, unknown>, message: Record<string, unknown>) => {
      const id = `IN${randomBytes(8).toString("hex").toUpperCase()}`;
      socket.emit("messages.upsert", { type: "notify", messages: [{ key: { id, ...key }, message, messageTimestamp: now() + n++ }] });
      return id;
    };
    const recorded = (providerId: string) =>
      waitFor(
        async () => (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data.find((m) => m.provider_message_id === providerId),
        (m) => m !== undefined,
      );

    it("records inbound text, media with caption, a location and a group message, contacts by phone number", async () => {
      const from = uniquePhone("+1559");
      const text = await recorded(upsert({ remoteJid: `${digits(from)}@s.whatsapp.net`, fromMe: false }, { conversation: "hi there" }));
      expect(text).to.include({ direction: "inbound", status: "delivered", from, body: "hi there" });
      expect(text!.to).to.equal(linked);

      const media = await recorded(
        upsert({ remoteJid: `${digits(from)}@s.whatsapp.net` }, { imageMessage: { url: "https://mmg.whatsapp.net/d/f/abc.enc", mimetype: "image/jpeg", caption: "look" } }),
      );
      expect(media!.body).to.equal("look");
      expect(media!.media).to.deep.include({ kind: "image", mimetype: "image/jpeg" });
      const doc = await recorded(upsert({ remoteJid: `${digits(from)}@s.whatsapp.net` }, { documentMessage: { mimetype: "application/pdf", fileName: "offer.pdf" } }));
      expect(doc!.media).to.deep.include({ kind: "document", filename: "offer.pdf" });

      const loc = await recorded(upsert({ remoteJid: `${digits(from)}@s.whatsapp.net` }, { locationMessage: { degreesLatitude: 48.85, degreesLongitude: 2.35, name: "Paris" } }));
      expect(loc!.location).to.deep.equal({ latitude: 48.85, longitude: 2.35, title: "Paris" });

      const lid = uniqueLid();
      const group = await recorded(
        upsert({ remoteJid: "120363000000000002@g.us", participant: `${lid}@lid`, participantAlt: `${digits(from)}@s.whatsapp.net` }, { extendedTextMessage: { text: "in the group" } }),
      );
      expect(group).to.deep.include({ from, to: { group: "120363000000000002@g.us" }, body: "in the group" });
    });

    it("reports a contact known only by LID by its phone number, through the map kept in PostgreSQL", async () => {
      const from = uniquePhone("+1559");
      const lid = uniqueLid();
      await recorded(upsert({ remoteJid: `${lid}@lid`, remoteJidAlt: `${digits(from)}@s.whatsapp.net` }, { conversation: "first, with both forms" }));
      const [row] = (await db().query(`SELECT phone FROM baileys_lid_map WHERE connection_id = $1 AND lid = $2`, [connectionId, `${lid}@lid`])) as { phone: string }[];
      expect(row!.phone).to.equal(from);
      const later = await recorded(upsert({ remoteJid: `${lid}@lid` }, { conversation: "then by LID alone" }));
      expect(later!.from).to.equal(from);
      const unknownLid = uniqueLid();
      const unmapped = await recorded(upsert({ remoteJid: `${unknownLid}@lid` }, { conversation: "never seen" }));
      // Unknown number: reported by its LID, in the form a reply can be addressed to.
      expect(unmapped!.from).to.equal(`lid:${unknownLid}`);
    });

    it("records what the phone itself wrote as an outbound message the gateway did not send, and not the echo of its own sends", async () => {
      const to = uniquePhone("+1559");
      const id = upsert({ remoteJid: `${digits(to)}@s.whatsapp.net`, fromMe: true }, { conversation: "typed on the phone" });
      const m = await recorded(id);
      expect(m).to.deep.include({ direction: "outbound", status: "sent", to, from: linked, body: "typed on the phone", metadata: { origin: "phone" } });

      const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body: "from the API" } }));
      const ours = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.provider_message_id !== null);
      socket.emit("messages.upsert", { type: "notify", messages: [{ key: { remoteJid: `${digits(to)}@s.whatsapp.net`, fromMe: true, id: ours.provider_message_id }, message: { conversation: "from the API" }, messageTimestamp: now() }] });
      const marker = await recorded(upsert({ remoteJid: `${digits(to)}@s.whatsapp.net`, fromMe: true }, { conversation: "after the echo" }));
      expect(marker).to.not.equal(undefined);
      const all = (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data;
      expect(all.filter((x) => x.provider_message_id === ours.provider_message_id)).to.have.length(1);
    });
  });
});
