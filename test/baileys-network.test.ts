// What the live network does to a linked number, played by the stand-in with the library's own
// event shapes and orders: contacts known only by LID, an offline backlog flushed at reconnect,
// receipts merged into the library's buffered upsert, a socket replaced elsewhere (440), a stale
// client version (405), a passkey step, restart requests (515), a lease renewal that hangs, and
// credentials the database will not take. All through the real API and the real database.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { WAMessage } from "@whiskeysockets/baileys";
import { expect } from "chai";
import pg from "pg";
import type { Message } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { standIn, type StandInSocket } from "./support/baileys-stand-in.js";
import { baileysEngine, createBaileysConnection, liveSocket, pairBaileys, uniqueLid } from "./support/baileys.js";
import { qrOf, uniquePhone, waitForConnection } from "./support/sandbox.js";
import { sleep, waitFor } from "./support/wait.js";
import { CREDS_SAVE_ATTEMPTS } from "../server/engines/baileys/session.js";
import { wipeSession } from "../server/engines/baileys/auth-state.js";
import { BaileysEngine, type BaileysOptions } from "../server/engines/baileys/engine.js";
import { purgeConnection } from "../jobs/purge-connection.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const slugOf = (p: string) => `${p}-${randomBytes(3).toString("hex")}`;
const digits = (phone: string) => phone.replace(/\D/g, "");
const db = () => testEnv().gateway.ctx.db;
const now = () => Math.floor(Date.now() / 1000);
const networkId = () => `IN${randomBytes(8).toString("hex").toUpperCase()}`;

describe("Baileys engine on the network as its users meet it (stand-in socket)", function () {
  this.timeout(90_000);
  let client: Client;

  // A workspace per test: its plan's connection limit is never the subject here.
  beforeEach(async () => {
    const ws = await newWorkspace();
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
  });
  afterEach(() => {
    standIn.world.acceptedVersion = null;
    standIn.world.publishedVersion = [2, 3000, 1];
    standIn.world.qrIntervalMs = 1_000;
  });

  async function paired(prefix: string): Promise<{ slug: string; id: string; phone: string; socket: StandInSocket }> {
    const slug = slugOf(prefix);
    const phone = uniquePhone("+1558");
    const { connection } = await pairBaileys(client, slug, phone);
    return { slug, id: connection.id, phone, socket: await liveSocket(connection.id, (s) => s.user !== undefined) };
  }

  const messagesOf = async (slug: string) => (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data;
  const recorded = (slug: string, providerId: string) =>
    waitFor(
      async () => (await messagesOf(slug)).find((m) => m.provider_message_id === providerId),
      (m) => m !== undefined,
    );
  const inbound = (remoteJid: string, text: string, extra: Record<string, unknown> = {}): WAMessage =>
    ({ key: { id: networkId(), remoteJid, fromMe: false, ...extra }, message: { conversation: text }, messageTimestamp: now() }) as WAMessage;

  describe("contacts known by LID", () => {
    it("answers a contact known only by LID at its LID, never at a phone JID made of its digits, and sends to lid:<digits>", async () => {
      const { slug, socket } = await paired("lid-reply");
      const lid = uniqueLid();
      const m = inbound(`${lid}@lid`, "who am I?");
      socket.emit("messages.upsert", { type: "notify", messages: [m] });
      const got = await recorded(slug, m.key.id!);
      expect(got!.from).to.equal(`lid:${lid}`);

      // The reply goes to the address the message came from.
      const reply = await expectOk(client.messages.send({ body: { connection: slug, to: got!.from!, body: "you are you" } }));
      await waitFor(() => expectOk(client.messages.get({ params: { id: reply.id } })), (x) => x.status === "submitted");
      const call = socket.calls.find((c) => c.method === "sendMessage" && (c.args[1] as { text?: string }).text === "you are you");
      expect(call!.args[0]).to.equal(`${lid}@lid`);
      expect(socket.calls.some((c) => c.method === "sendMessage" && c.args[0] === `${lid}@s.whatsapp.net`)).to.equal(false);
    });

    it("reports the number the library's own LID store knows, with from_lid beside it", async () => {
      const { slug, id, socket } = await paired("lid-store");
      const lid = uniqueLid();
      const phone = uniquePhone("+1559");
      standIn.world.lidStore.set(`${lid}@lid`, `${digits(phone)}@s.whatsapp.net`);
      const m = inbound(`${lid}@lid`, "known to the library");
      socket.emit("messages.upsert", { type: "notify", messages: [m] });
      const got = await recorded(slug, m.key.id!);
      expect(got!.from).to.equal(phone);
      expect(got!.metadata).to.deep.equal({ from_lid: `lid:${lid}` });
      // Kept in our own map too.
      const [row] = (await db().query(`SELECT phone FROM baileys_lid_map WHERE connection_id = $1 AND lid = $2`, [id, `${lid}@lid`])) as { phone: string }[];
      expect(row!.phone).to.equal(phone);
    });

    it("learns numbers from history-sync mappings", async () => {
      const { slug, socket } = await paired("lid-history");
      const lid = uniqueLid();
      const phone = uniquePhone("+1559");
      socket.offlineFlush([], [], [{ lid: `${lid}@lid`, pn: `${digits(phone)}@s.whatsapp.net` }]);
      await waitFor(
        async () => (await db().query(`SELECT 1 FROM baileys_lid_map WHERE lid = $1`, [`${lid}@lid`])) as unknown[],
        (r) => r.length === 1,
      );
      const m = inbound(`${lid}@lid`, "after the history sync");
      socket.emit("messages.upsert", { type: "notify", messages: [m] });
      expect((await recorded(slug, m.key.id!))!.from).to.equal(phone);
    });
  });

  describe("nothing the library acknowledged is lost", () => {
    it("reports a receipt the library merged into its buffered upsert of our own message", async () => {
      const { slug, socket } = await paired("merged");
      const to = uniquePhone("+1559");
      const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body: "delivered while we were away" } }));
      const ours = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.provider_message_id !== null && x.status === "submitted");
      const jid = `${digits(to)}@s.whatsapp.net`;
      const echo = { key: { id: ours.provider_message_id!, remoteJid: jid, fromMe: true }, message: { conversation: "delivered while we were away" }, messageTimestamp: now() } as WAMessage;
      socket.offlineFlush([echo], [{ key: { id: ours.provider_message_id!, remoteJid: jid, fromMe: true }, status: 3 }]);
      // 0.3 s on a quiet machine; on the embedded database in CI, beside the other passes and just
      // after the 2,000-message flush above, 10 s ran out twice.
      const done = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "delivered", 30_000);
      expect(done.status).to.equal("delivered");
    });

    it("reports one-to-one receipts that come as messages.update and group receipts as message-receipt.update", async () => {
      const { slug, socket } = await paired("receipts");
      const to = uniquePhone("+1559");
      const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body: "receipts" } }));
      const m = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.provider_message_id !== null && x.status === "submitted");
      socket.receipt(`${digits(to)}@s.whatsapp.net`, m.provider_message_id!, 3);
      await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "delivered");
      const g = await expectOk(client.messages.send({ body: { connection: slug, to: { group: "120363000000000009@g.us" }, body: "to the group" } }));
      const gm = await waitFor(() => expectOk(client.messages.get({ params: { id: g.id } })), (x) => x.provider_message_id !== null && x.status === "submitted");
      // Read a while before it reached us (a receipt that waited): stamped with its own time, which
      // is after the entries before it (a timeline never goes back in time) and before now.
      const last = Math.max(...gm.timeline.map((t) => Date.parse(t.at)));
      const readAt = Math.ceil(last / 1000);
      await waitFor(async () => Date.now(), (t) => t > readAt * 1000 + 1500, 5_000);
      const first = uniqueLid();
      socket.groupReceipt("120363000000000009@g.us", gm.provider_message_id!, `${first}@lid`, "readTimestamp", readAt);
      const read = await waitFor(() => expectOk(client.messages.get({ params: { id: g.id } })), (x) => x.status === "read");
      expect(read.timeline.find((t) => t.status === "read")!.at).to.equal(new Date(readAt * 1000).toISOString());
      expect(read.timeline.find((t) => t.status === "read")!.detail).to.equal(`by lid:${first}`);
      // Every member's receipt is kept, each with its own time (a number where the LID is known).
      const member = uniquePhone("+1559");
      const memberLid = uniqueLid();
      standIn.world.lidStore.set(`${memberLid}@lid`, `${digits(member)}@s.whatsapp.net`);
      socket.groupReceipt("120363000000000009@g.us", gm.provider_message_id!, `${memberLid}@lid`, "receiptTimestamp", readAt + 1);
      socket.groupReceipt("120363000000000009@g.us", gm.provider_message_id!, `${memberLid}@lid`, "readTimestamp", readAt + 2);
      // The same receipt again (the library redelivers) is kept once.
      socket.groupReceipt("120363000000000009@g.us", gm.provider_message_id!, `${memberLid}@lid`, "readTimestamp", readAt + 2);
      const all = await waitFor(() => expectOk(client.messages.get({ params: { id: g.id } })), (x) => x.timeline.filter((t) => t.detail === `by ${member}`).length === 2);
      expect(all.status).to.equal("read");
      expect(all.timeline.filter((t) => t.detail === `by ${member}`).map((t) => [t.status, t.at])).to.deep.equal([
        ["delivered", new Date((readAt + 1) * 1000).toISOString()],
        ["read", new Date((readAt + 2) * 1000).toISOString()],
      ]);
      await sleep(300);
      expect((await expectOk(client.messages.get({ params: { id: g.id } }))).timeline.filter((t) => t.detail?.startsWith("by "))).to.have.length(3);
    });

    it("records view-once, associated, sticker, video-note, contact(s) and button/list/template/interactive replies as what they are", async () => {
      const { slug, socket } = await paired("coverage");
      const jid = `${digits(uniquePhone("+1559"))}@s.whatsapp.net`;
      const vcard = "BEGIN:VCARD\nVERSION:3.0\nFN:Ada\nTEL;type=CELL:+15550009999\nEND:VCARD";
      const cases: [Record<string, unknown>, (m: Message) => void][] = [
        [{ viewOnceMessageV2Extension: { message: { imageMessage: { mimetype: "image/jpeg", caption: "once" } } } }, (m) => expect(m).to.deep.include({ body: "once" })],
        [{ associatedChildMessage: { message: { conversation: "child" } } }, (m) => expect(m.body).to.equal("child")],
        [{ stickerMessage: { mimetype: "image/webp" } }, (m) => expect(m.media).to.deep.include({ kind: "image", mimetype: "image/webp" })],
        [{ ptvMessage: { mimetype: "video/mp4" } }, (m) => expect(m.media).to.deep.include({ kind: "video", mimetype: "video/mp4" })],
        [{ contactMessage: { displayName: "Ada", vcard } }, (m) => expect(m.body).to.equal(vcard)],
        [{ buttonsResponseMessage: { selectedButtonId: "b1", selectedDisplayText: "Yes, please" } }, (m) => expect(m.body).to.equal("Yes, please")],
        [{ listResponseMessage: { title: "Tuesday 10:00", singleSelectReply: { selectedRowId: "r2" } } }, (m) => expect(m.body).to.equal("Tuesday 10:00")],
        [{ templateButtonReplyMessage: { selectedId: "t1", selectedDisplayText: "Call me back", selectedIndex: 0 } }, (m) => expect(m.body).to.equal("Call me back")],
        [{ interactiveResponseMessage: { body: { text: "Book it" }, nativeFlowResponseMessage: { name: "flow", paramsJson: "{}" } } }, (m) => expect(m.body).to.equal("Book it")],
        [
          { contactsArrayMessage: { displayName: "2 contacts", contacts: [{ displayName: "Ada", vcard }, { displayName: "Grace" }] } },
          // Each card in turn; one without a vCard by its name.
          (m) => expect(m.body).to.equal(`${vcard}\nGrace`),
        ],
        [{ viewOnceMessageV2Extension: { message: { audioMessage: { mimetype: "audio/ogg; codecs=opus", ptt: true } } } }, (m) => expect(m.media).to.deep.include({ kind: "audio" })],
        [{ groupMentionedMessage: { message: { extendedTextMessage: { text: "@everyone lunch" } } } }, (m) => expect(m.body).to.equal("@everyone lunch")],
        // Replies from clients that sent no text: the id of what was chosen, never dropped.
        [{ buttonsResponseMessage: { selectedButtonId: "btn-yes" } }, (m) => expect(m.body).to.equal("btn-yes")],
        [{ listResponseMessage: { title: "", singleSelectReply: { selectedRowId: "row-2" } } }, (m) => expect(m.body).to.equal("row-2")],
      ];
      for (const [message, check] of cases) {
        const m = { key: { id: networkId(), remoteJid: jid, fromMe: false }, message, messageTimestamp: now() } as WAMessage;
        socket.emit("messages.upsert", { type: "notify", messages: [m] });
        check((await recorded(slug, m.key.id!))!);
      }
    });

    it("never records channel or status-broadcast messages as inbound", async () => {
      const { slug, socket } = await paired("channels");
      const channel = inbound("120363000000000010@newsletter", "a channel post");
      const status = inbound("status@broadcast", "a status", { participant: `${digits(uniquePhone("+1559"))}@s.whatsapp.net` });
      const marker = inbound(`${digits(uniquePhone("+1559"))}@s.whatsapp.net`, "a person");
      socket.emit("messages.upsert", { type: "notify", messages: [channel, status, marker] });
      await recorded(slug, marker.key.id!);
      const all = await messagesOf(slug);
      expect(all.map((x) => x.provider_message_id)).to.not.include.members([channel.key.id, status.key.id]);
    });
  });

  describe("groups", () => {
    it("queries a group's metadata once for many sends, also across a socket restart, and again after a group event", async () => {
      const { slug, id, socket } = await paired("groups");
      const group = `1203630${randomBytes(5).readUIntBE(0, 5)}@g.us`;
      const queries = () => standIn.socketsOf(id).flatMap((s) => s.calls).filter((c) => c.method === "groupMetadata" && c.args[0] === group).length;
      const sendToGroup = async (body: string) => {
        const sent = await expectOk(client.messages.send({ body: { connection: slug, to: { group }, body } }));
        await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (m) => m.status === "submitted", 15_000);
      };
      await sendToGroup("one");
      await sendToGroup("two");
      expect(queries()).to.equal(1);
      // A lost connection: the new socket sends from the same cache.
      socket.close(428);
      const next = await liveSocket(id, (s) => s !== socket && s.user !== undefined);
      await sendToGroup("three");
      expect(queries()).to.equal(1);
      // Someone joined: the metadata is fetched again, once.
      next.emit("group-participants.update", { id: group, author: `${uniqueLid()}@lid`, participants: [{ id: `${uniqueLid()}@lid` }], action: "add" });
      await waitFor(async () => queries(), (n) => n === 2);
      await sendToGroup("four");
      expect(queries()).to.equal(2);
    });
  });

  describe("account restriction", () => {
    it("learns a restriction set while no socket was open when the next one opens", async () => {
      const { slug, socket, phone } = await paired("restricted-offline");
      expect(socket.calls.some((c) => c.method === "fetchAccountReachoutTimelock")).to.equal(true);
      // Restricted while the socket was down: nothing announced it, the network answers when asked.
      standIn.world.restrictions.set(digits(phone), { isActive: true });
      socket.close(428);
      const c = await waitForConnection(client, slug, (x) => x.detail === "account_restricted", 15_000);
      expect(c.state).to.equal("connected");
    });

    it("asks the network for the account's standing after a 463 ack, and pauses sending when it is restricted", async () => {
      const { slug, socket, phone } = await paired("restricted-463");
      const to = uniquePhone("+1559");
      const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body: "refused" } }));
      const m = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.provider_message_id !== null && x.status === "submitted");
      const asked = socket.calls.filter((c) => c.method === "fetchAccountReachoutTimelock").length;
      standIn.world.restrictions.set(digits(phone), { isActive: true, timeEnforcementEnds: new Date(Date.now() + 3_600_000) });
      socket.receipt(`${digits(to)}@s.whatsapp.net`, m.provider_message_id!, 0, 463);
      const failed = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "failed");
      expect(failed.error!.code).to.equal("network_463");
      expect(socket.calls.filter((c) => c.method === "fetchAccountReachoutTimelock").length).to.equal(asked + 1);
      await waitForConnection(client, slug, (x) => x.detail === "account_restricted");
      const held = await expectOk(client.messages.send({ body: { connection: slug, to, body: "held" } }));
      await sleep(1_500);
      expect((await expectOk(client.messages.get({ params: { id: held.id } }))).status).to.equal("queued");
    });
  });

  describe("outbound documents", () => {
    it("keeps a document's name and extension: the given one, the URL's, or one from the mimetype; the given mimetype wins", async () => {
      const { slug, socket } = await paired("documents");
      const files = createServer((_req, res) => res.writeHead(200, { "content-type": "application/pdf" }).end(Buffer.from("%PDF-1.4")));
      await new Promise<void>((r) => files.listen(0, "127.0.0.1", r));
      const base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
      try {
        const sendDoc = async (media: Record<string, unknown>) => {
          const sent = await expectOk(client.messages.send({ body: { connection: slug, to: uniquePhone("+1559"), media: { kind: "document", ...media } } as never }));
          const m = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "submitted" && x.provider_message_id !== null, 15_000);
          const call = socket.calls.find((c) => c.method === "sendMessage" && (c.args[2] as { messageId?: string }).messageId === m.provider_message_id);
          return call!.args[1] as { fileName: string; mimetype: string };
        };
        expect((await sendDoc({ url: `${base}/files/report.pdf` })).fileName).to.equal("report.pdf");
        expect((await sendDoc({ url: `${base}/download?id=7` })).fileName).to.equal("download.pdf");
        expect(await sendDoc({ url: `${base}/x`, filename: "Offer 2026.pdf", mimetype: "application/x-pdf" })).to.deep.include({ fileName: "Offer 2026.pdf", mimetype: "application/x-pdf" });
      } finally {
        files.close();
      }
    });
  });

  describe("outbound audio", () => {
    it("sends Opus-in-Ogg audio as a voice note (ptt) and other audio as a file, with the given mimetype over the origin's", async () => {
      const { slug, socket } = await paired("audio");
      const files = createServer((_req, res) => res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from("OggS")));
      await new Promise<void>((r) => files.listen(0, "127.0.0.1", r));
      const base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
      try {
        const sendAudio = async (mimetype: string) => {
          const sent = await expectOk(client.messages.send({ body: { connection: slug, to: uniquePhone("+1559"), media: { url: `${base}/a`, kind: "audio", mimetype } } }));
          const m = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "submitted" && x.provider_message_id !== null, 15_000);
          const call = socket.calls.find((c) => c.method === "sendMessage" && (c.args[2] as { messageId?: string }).messageId === m.provider_message_id);
          return call!.args[1] as { mimetype: string; ptt?: boolean };
        };
        expect(await sendAudio("audio/ogg; codecs=opus")).to.deep.include({ mimetype: "audio/ogg; codecs=opus", ptt: true });
        expect(await sendAudio("audio/opus")).to.deep.include({ ptt: true });
        const mp3 = await sendAudio("audio/mpeg");
        expect(mp3.mimetype).to.equal("audio/mpeg");
        expect(mp3.ptt).to.equal(undefined);
        // Ogg without Opus (Vorbis) is not the network's voice-note format.
        expect((await sendAudio("audio/ogg; codecs=vorbis")).ptt).to.equal(undefined);
      } finally {
        files.close();
      }
    });
  });

  describe("a number not on the network", () => {
    it("ends failed with not_on_network after the cached check, writing nothing; a number on it is written", async () => {
      const { slug, socket } = await paired("off-network");
      const off = uniquePhone("+1559");
      standIn.world.offNetwork.add(`${digits(off)}@s.whatsapp.net`);
      const lookups = () => socket.calls.filter((c) => c.method === "onWhatsApp" && c.args[0] === `${digits(off)}@s.whatsapp.net`).length;
      for (const body of ["first", "second"]) {
        const sent = await expectOk(client.messages.send({ body: { connection: slug, to: off, body } }));
        const m = await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "failed", 15_000);
        expect(m).to.deep.include({ status: "failed", error: { code: "not_on_network", message: `${off} is not on the network` } });
      }
      expect(socket.calls.filter((c) => c.method === "sendMessage" && c.args[0] === `${digits(off)}@s.whatsapp.net`), "nothing written to it").to.have.length(0);
      expect(lookups(), "the second send took the remembered answer").to.equal(1);
      const on = uniquePhone("+1559");
      const sent = await expectOk(client.messages.send({ body: { connection: slug, to: on, body: "hello" } }));
      await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "submitted" && x.provider_message_id !== null, 15_000);
      expect(socket.calls.filter((c) => c.method === "sendMessage" && c.args[0] === `${digits(on)}@s.whatsapp.net`)).to.have.length(1);
    });

    it("sends anyway when the check cannot answer in time: the network decides", async () => {
      const { slug, socket } = await paired("check-hangs");
      standIn.world.hangChecks = true;
      try {
        const to = uniquePhone("+1559");
        const sent = await expectOk(client.messages.send({ body: { connection: slug, to, body: "unchecked" } }));
        await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (x) => x.status === "submitted" && x.provider_message_id !== null, 20_000);
        expect(socket.calls.filter((c) => c.method === "sendMessage" && c.args[0] === `${digits(to)}@s.whatsapp.net`)).to.have.length(1);
      } finally {
        standIn.world.hangChecks = false;
      }
    });
  });

  describe("unlinking", () => {
    it("removes the companion device on delete even when no process holds the socket", async () => {
      const { slug, id, socket } = await paired("unlink");
      await expectOk(client.connections.suspend({ params: { connection: slug } }));
      await waitFor(async () => socket.ended, (ended) => ended);
      expect(standIn.live(id)).to.equal(undefined);
      const res = await client.connections.delete({ params: { connection: slug } });
      expect(res.status).to.equal(204);
      // A socket opened with the stored credentials, only to unlink the device.
      const unlinked = await waitFor(async () => standIn.socketsOf(id).find((s) => s !== socket && s.calls.some((c) => c.method === "logout")), (s) => s !== undefined);
      expect(unlinked!.user!.id).to.contain(":7@s.whatsapp.net");
      await waitFor(async () => (await db().query(`SELECT 1 FROM baileys_auth WHERE connection_id = $1`, [id])) as unknown[], (rows) => rows.length === 0);
    });

    it("waits out the lease of a holder that died, then unlinks with the credentials read at delete (the purge wipes them meanwhile)", async () => {
      const { slug, id, socket } = await paired("unlink-dead");
      await expectOk(client.connections.suspend({ params: { connection: slug } }));
      await waitFor(async () => socket.ended, (ended) => ended);
      // A process that held the socket and died: its lease runs for another 3 s.
      await db().query(`INSERT INTO baileys_leases (connection_id, holder, expires_at) VALUES ($1, 'dead-process', now() + interval '3 seconds')`, [id]);
      const before = standIn.socketsOf(id).length;
      const deleted = Date.now();
      expect((await client.connections.delete({ params: { connection: slug } })).status).to.equal(204);
      // The delete's purge, run before the lease ran out: the stored credentials are gone.
      await purgeConnection(db(), id);
      const unlinked = await waitFor(async () => standIn.socketsOf(id).find((s) => s !== socket && s.calls.some((c) => c.method === "logout")), (s) => s !== undefined, 20_000);
      expect(Date.now() - deleted, "not before the dead holder's lease ran out").to.be.at.least(2_900);
      expect(unlinked!.user!.id).to.contain(":7@s.whatsapp.net");
      expect(standIn.socketsOf(id).slice(before), "one socket, only to unlink").to.deep.equal([unlinked]);
      await waitFor(async () => (await db().query(`SELECT 1 FROM baileys_auth WHERE connection_id = $1 UNION ALL SELECT 1 FROM baileys_leases WHERE connection_id = $1`, [id])) as unknown[], (rows) => rows.length === 0);
    });

    it("leaves the unlink to a live holder, which drops its lease at its next poll: no second socket here", async () => {
      const { slug, id, socket } = await paired("unlink-live");
      await expectOk(client.connections.suspend({ params: { connection: slug } }));
      await waitFor(async () => socket.ended, (ended) => ended);
      await db().query(`INSERT INTO baileys_leases (connection_id, holder, expires_at) VALUES ($1, 'live-process', now() + interval '20 seconds')`, [id]);
      const before = standIn.socketsOf(id).length;
      const deleting = client.connections.delete({ params: { connection: slug } });
      // The live holder's renewal finds the connection deleted: it drops the row and unlinks its own socket.
      await sleep(1_000);
      await db().query(`DELETE FROM baileys_leases WHERE connection_id = $1 AND holder = 'live-process'`, [id]);
      expect((await deleting).status).to.equal(204);
      await sleep(1_000);
      expect(standIn.socketsOf(id).slice(before)).to.have.length(0);
      expect(await db().query(`SELECT 1 FROM baileys_leases WHERE connection_id = $1`, [id])).to.have.length(0);
    });
  });

  describe("retry requests", () => {
    it("counts a message's retry requests across socket restarts, outside the socket", async () => {
      const { id, socket } = await paired("retries");
      const counters = socket.options.msgRetryCounterCache!;
      // What the library does on a retry receipt: read, increment, write back.
      await counters.set("3EB0ABC", 2);
      socket.close(428);
      const next = await liveSocket(id, (s) => s !== socket && s.user !== undefined);
      expect(next.options.msgRetryCounterCache).to.equal(counters);
      expect(await next.options.msgRetryCounterCache!.get<number>("3EB0ABC")).to.equal(2);
    });
  });

  describe("the socket is never fought over", () => {
    it("reads disconnected / replaced_elsewhere after a 440, is not taken up by another process, and resume takes it back", async () => {
      const { slug, id, socket } = await paired("replaced");
      socket.close(440);
      const c = await waitForConnection(client, slug, (x) => x.state === "disconnected");
      expect(c.detail).to.equal("replaced_elsewhere");
      // Nobody holds it, and no process's scan takes it up. The state is recorded before the lease
      // goes (session.ts, giveUp), so the lease may still be held for a moment after the state reads.
      await waitFor(() => baileysEngine().leases.holderOf(id), (holder) => holder === null, 5_000);
      expect(await baileysEngine().leases.orphans("baileys", 1000)).to.not.include(id);
      const sockets = standIn.socketsOf(id).length;
      await sleep(((baileysEngine().leases.ttlSeconds * 1000) / 4) * 1.5);
      expect(standIn.socketsOf(id)).to.have.length(sockets);
      // The link survived: suspend and resume reopen it without pairing.
      await expectOk(client.connections.suspend({ params: { connection: slug } }));
      await expectOk(client.connections.resume({ params: { connection: slug } }));
      const back = await waitForConnection(client, slug, (x) => x.state === "connected");
      expect(back.detail).to.equal(null);
      expect(standIn.live(id)!.qrs).to.have.length(0);
    });

    it("opens no QR socket for a connection that still reads connected but has no linked device; it reads disconnected", async () => {
      const { slug, id } = await paired("no-qr-socket");
      // Another process unlinked it and its report is not applied yet: the connection reads
      // connected, nobody holds it, and its auth state is gone.
      await baileysEngine().stop({ id, callbackUrl: "" });
      await wipeSession(testEnv().gateway.ctx.db, id);
      const before = standIn.socketsOf(id).length;
      const c = await waitForConnection(client, slug, (x) => x.state !== "connected", 20_000);
      expect(c.state).to.equal("disconnected");
      expect(standIn.socketsOf(id).slice(before).filter((s) => s.qrs.length > 0)).to.have.length(0);
      expect(standIn.socketsOf(id)).to.have.length(before);
    });

    it("pairs through the process that holds the pairing socket when pair lands on another one", async () => {
      // QRs as slow as the network's (the holder takes the ask at its next poll, up to 5 s away).
      standIn.world.qrIntervalMs = 5_000;
      // A second process in this one: its own leases and spool, the same database and network.
      const spoolDir = await mkdtemp(join(tmpdir(), "baileys-other-"));
      const other = new BaileysEngine({ ...(baileysEngine() as unknown as { options: BaileysOptions }).options, spoolDir });
      await other.open();
      try {
        const slug = slugOf("pair-elsewhere");
        const created = await createBaileysConnection(client, slug);
        // An earlier pair landed on the other process: it holds the pairing socket.
        await other.startPairing({ id: created.id, callbackUrl: "" }, { method: "qr" });
        expect(await other.leases.holderOf(created.id)).to.equal(other.leases.holder);
        const grant = await expectOk(client.connections.pair({ params: { connection: slug } }));
        const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: slug, grantId: grant.grant_id } })));
        const socket = await liveSocket(created.id);
        expect(socket.qrs).to.include(qr.payload);
        expect(standIn.socketsOf(created.id).filter((s) => !s.ended)).to.have.length(1);
        expect(await other.leases.holderOf(created.id), "still the other process's socket").to.equal(other.leases.holder);
        const phone = uniquePhone("+1558");
        socket.scan(phone, uniqueLid());
        await waitForConnection(client, slug, (c) => c.state === "connected" && c.phone === phone, 15_000);
      } finally {
        await other.close();
        await rm(spoolDir, { recursive: true, force: true });
      }
    });

    it("reconnects at once after the first restart request (515) and backs off after the next", async () => {
      // Pairing ends with the library's restart request: that one was answered at once.
      const { id, socket } = await paired("restart");
      const before = standIn.socketsOf(id).length;
      const first = Date.now();
      socket.close(515);
      const second = await liveSocket(id, (s) => s !== socket && s.user !== undefined);
      const closedAt = Date.now();
      expect(closedAt - first).to.be.greaterThanOrEqual(500);
      second.close(515);
      const third = await liveSocket(id, (s) => s !== second && s !== socket && s.user !== undefined);
      const waited = Date.now() - closedAt;
      expect(standIn.socketsOf(id)).to.have.length(before + 2);
      expect(third).to.not.equal(undefined);
      // reconnectDelay(0) is at least half the 1 s base.
      expect(waited).to.be.greaterThanOrEqual(500);
    });

    it("closes its sockets before the lease can expire when the renewal hangs", async () => {
      const { id, socket: held } = await paired("hang");
      const ttlMs = baileysEngine().leases.ttlSeconds * 1000;
      const blocker = new pg.Client({ connectionString: testEnv().databaseUrl });
      await blocker.connect();
      try {
        await blocker.query("BEGIN");
        // The renewal's UPDATE of this row waits on the lock: a renewal that hangs.
        const [lease] = (await blocker.query(`SELECT expires_at FROM baileys_leases WHERE connection_id = $1 FOR UPDATE`, [id])).rows as { expires_at: Date }[];
        await waitFor(async () => held.ended, (ended) => ended, ttlMs);
        expect(Date.now()).to.be.lessThan(new Date(lease!.expires_at).getTime());
      } finally {
        await blocker.query("ROLLBACK").catch(() => undefined);
        await blocker.end();
      }
      // Once renewals go through again, the number is taken up again (after its lease expired).
      await liveSocket(id, (s) => s.user !== undefined, ttlMs * 3);
    });
  });

  describe("the client version", () => {
    it("reads disconnected / client_version_refused while refused, counts it, fetches the current version and reconnects", async () => {
      const engine = baileysEngine();
      engine.tuning.versionRefetchMs = 0;
      const { slug, id } = await paired("version");
      // The socket open now (on a loaded machine the one paired may have been replaced already).
      const socket = await liveSocket(id, (s) => s.user !== undefined, 30_000);
      standIn.world.acceptedVersion = [2, 3000, 2];
      standIn.world.publishedVersion = null;
      try {
        socket.close(428);
        const refused = await waitForConnection(client, slug, (x) => x.state === "disconnected", 30_000);
        expect(refused.detail).to.equal("client_version_refused");
        const metrics = await fetch(`${testEnv().baseUrl}/metrics`, { headers: { authorization: `Bearer ${testEnv().gateway.ctx.config.metricsToken}` } });
        expect(await metrics.text()).to.match(/svc_engine_connection_problems_total\{engine="baileys",reason="client_version_refused"\} [1-9]/);

        // Pairing another number meanwhile: 503, naming the refusal.
        const other = slugOf("version-pair");
        await createBaileysConnection(client, other);
        const pair = await client.connections.pair({ params: { connection: other } });
        expect(pair.status).to.equal(503);
        expect(JSON.stringify(pair.body)).to.contain("client_version_refused");

        // The network's web client publishes the current version: the next attempt presents it.
        standIn.world.publishedVersion = [2, 3000, 2];
        const back = await waitForConnection(client, slug, (x) => x.state === "connected", 30_000);
        expect(back.detail).to.equal(null);
        expect(standIn.live(id)!.options.version).to.deep.equal([2, 3000, 2]);
      } finally {
        // Whatever happened, the network accepts every version again for the tests after this one.
        standIn.world.acceptedVersion = null;
        standIn.world.publishedVersion ??= [2, 3000, 2];
        engine.tuning.versionRefetchMs = 60_000;
      }
    });
  });

  describe("steps the library cannot do", () => {
    it("reports passkey_required when the network asks for a passkey after the scan", async () => {
      const slug = slugOf("passkey");
      const created = await createBaileysConnection(client, slug);
      await expectOk(client.connections.pair({ params: { connection: slug } }));
      const socket = await liveSocket(created.id, (s) => s.qrs.length > 0);
      socket.askPasskey();
      const c = await waitForConnection(client, slug, (x) => x.state === "disconnected");
      expect(c.detail).to.equal("passkey_required");
      expect(socket.calls.some((x) => x.method === "end")).to.equal(true);
    });
  });

  describe("credentials", () => {
    async function refuseCredsWrites(connectionId: string): Promise<() => Promise<void>> {
      const fn = `refuse_creds_${randomBytes(4).toString("hex")}`;
      await db().query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          IF NEW.kind = 'creds' AND NEW.connection_id = '${connectionId}' THEN RAISE EXCEPTION 'creds refused for the test'; END IF; RETURN NEW; END $$`);
      await db().query(`CREATE TRIGGER ${fn} BEFORE INSERT OR UPDATE ON baileys_auth FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
      return async () => {
        await db().query(`DROP TRIGGER IF EXISTS ${fn} ON baileys_auth`);
        await db().query(`DROP FUNCTION IF EXISTS ${fn}()`);
      };
    }
    const credsOf = async (connectionId: string) =>
      ((await db().query(`SELECT updated_at FROM baileys_auth WHERE connection_id = $1 AND kind = 'creds'`, [connectionId])) as { updated_at: Date }[])[0]!.updated_at.getTime();

    it("retries a failed save until it is written", async () => {
      const engine = baileysEngine();
      // Ten attempts 500 ms apart: the refusal (a sleep and two statements) must end within them,
      // which on a loaded embedded database ten 100 ms pauses did not leave time for.
      engine.tuning.credsSavePauseMs = 500;
      const { id, socket } = await paired("creds-retry");
      const before = await credsOf(id);
      const allow = await refuseCredsWrites(id);
      try {
        socket.emit("creds.update", { routingInfo: Buffer.from("new routing") });
        await sleep(300);
        expect(await credsOf(id)).to.equal(before);
      } finally {
        await allow();
      }
      await waitFor(() => credsOf(id), (t) => t > before, 30_000);
      expect(socket.ended).to.equal(false);
      engine.tuning.credsSavePauseMs = 3_000;
    });

    it(`closes the socket after ${CREDS_SAVE_ATTEMPTS} failed saves, and saves before the next socket opens`, async () => {
      const engine = baileysEngine();
      engine.tuning.credsSavePauseMs = 20;
      const { id, socket } = await paired("creds-fail");
      const before = await credsOf(id);
      const allow = await refuseCredsWrites(id);
      try {
        socket.emit("creds.update", { routingInfo: Buffer.from("newer routing") });
        await waitFor(async () => socket.ended, (ended) => ended, 20_000);
        expect(await credsOf(id)).to.equal(before);
      } finally {
        await allow();
      }
      const next = await liveSocket(id, (s) => s !== socket && s.user !== undefined, 30_000);
      expect(next).to.not.equal(undefined);
      expect(await credsOf(id)).to.be.greaterThan(before);
      engine.tuning.credsSavePauseMs = 3_000;
    });
  });

  // Last in the file: on the embedded database, which runs in this process, digesting 2,000
  // messages keeps the process busy for a while after the test, and the tests that followed it
  // (pairings, receipts) ran out of their waits in CI.
  describe("nothing the library acknowledged is lost, in bulk", () => {
    it("records an offline flush of 2,000 messages whole, once, with what the phone typed meanwhile", async function () {
      // 5 s on a quiet machine; 47 s and more than 60 s on the embedded database in CI beside the other passes.
      this.timeout(240_000);
      const { slug, id, socket } = await paired("backlog");
      const from = uniquePhone("+1559");
      const to = uniquePhone("+1559");
      // Written an hour ago, while the gateway was down.
      const then = now() - 3600;
      const backlog: WAMessage[] = Array.from({ length: 2000 }, (_, i) => ({ ...inbound(`${digits(from)}@s.whatsapp.net`, `offline ${i}`), messageTimestamp: then + i }) as WAMessage);
      const typed = { key: { id: networkId(), remoteJid: `${digits(to)}@s.whatsapp.net`, fromMe: true }, message: { conversation: "typed on the phone while down" }, messageTimestamp: then } as WAMessage;
      socket.offlineFlush([...backlog, typed]);
      const count = async () =>
        ((await db().query(`SELECT count(*)::int AS n FROM messages WHERE connection_id = $1`, [id])) as { n: number }[])[0]!.n;
      await waitFor(count, (n) => n === 2001, 150_000, 250);
      const phoneWritten = await recorded(slug, typed.key.id!);
      expect(phoneWritten).to.deep.include({ direction: "outbound", body: "typed on the phone while down", metadata: { origin: "phone" } });
      // Applied once: the same flush again (a redelivery) changes nothing.
      socket.emit("messages.upsert", { type: "notify", messages: backlog.slice(0, 600) });
      await waitFor(async () => baileysEngine().spool.pending().length, (n) => n === 0, 30_000);
      expect(await count()).to.equal(2001);
    });
  });
});
