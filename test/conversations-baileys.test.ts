// Conversations on the Baileys engine, driven through the stand-in socket: each route maps to the
// library's call (a quote in sendMessage's options, react, edit, delete, readMessages,
// sendPresenceUpdate, a poll, downloadMediaMessage with the sealed media key), and what the
// network reports of a chat (a contact's reaction, edit, revoke, typing) becomes our events.
import { createCipheriv, createHash, createHmac, randomBytes } from "node:crypto";
import { proto } from "@whiskeysockets/baileys";
import { expect } from "chai";
import type { Message } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Client } from "./support/actors.js";
import { pollSecret, standIn, type StandInSocket } from "./support/baileys-stand-in.js";
import { liveSocket, pairBaileys } from "./support/baileys.js";
import { eventsOf } from "./support/conversations.js";
import { uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const digits = (phone: string) => phone.replace(/\D/g, "");
const jid = (phone: string) => `${digits(phone)}@s.whatsapp.net`;

describe("conversations on the Baileys engine (stand-in socket)", function () {
  this.timeout(60_000);
  let client: Client;
  let key: string;
  let workspaceId: string;
  let slug: string;
  let socket: StandInSocket;
  let n = 0;

  before(async () => {
    const ws = await newWorkspace();
    workspaceId = ws.id;
    ({ client, key } = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]));
    slug = `bly-conv-${randomBytes(3).toString("hex")}`;
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    socket = await liveSocket(connection.id, (s) => s.user !== undefined);
  });

  const upsert = (key_: Record<string, unknown>, message: Record<string, unknown>) => {
    const id = `IN${randomBytes(8).toString("hex").toUpperCase()}`;
    socket.emit("messages.upsert", { type: "notify", messages: [{ key: { id, ...key_ }, message, messageTimestamp: Math.floor(Date.now() / 1000) + n++ }] });
    return id;
  };
  const recorded = (providerId: string) =>
    waitFor(
      async () => (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data.find((m) => m.provider_message_id === providerId),
      (m) => m !== undefined,
    ) as Promise<Message>;
  const lastCall = (method: string) => socket.calls.filter((c) => c.method === method).at(-1)!;
  const handedOff = (id: string) => waitFor(() => expectOk(client.messages.get({ params: { id } })), (m) => m.provider_message_id !== null);

  it("replies quoting the contact's message, reacts to it, marks it read and shows typing", async () => {
    const contact = uniquePhone("+1559");
    const inboundId = upsert({ remoteJid: jid(contact), fromMe: false }, { conversation: "where is my order?" });
    const inbound = await recorded(inboundId);

    const reply = await expectOk(client.conversations.reply({ params: { id: inbound.id }, body: { body: "On its way" } }));
    await handedOff(reply.id);
    const [to, content, options] = lastCall("sendMessage").args as [string, Record<string, unknown>, { quoted?: { key: Record<string, unknown> } }];
    expect(to).to.equal(jid(contact));
    expect(content).to.deep.equal({ text: "On its way" });
    expect(options.quoted!.key).to.deep.include({ id: inboundId, remoteJid: jid(contact), fromMe: false });

    await expectOk(client.conversations.react({ params: { id: inbound.id }, body: { emoji: "👍" } }));
    expect(lastCall("sendMessage").args.slice(0, 2)).to.deep.equal([jid(contact), { react: { text: "👍", key: { remoteJid: jid(contact), fromMe: false, id: inboundId } } }]);

    expect((await expectOk(client.conversations.markRead({ params: { id: inbound.id } }))).marked).to.equal(1);
    expect(lastCall("readMessages").args).to.deep.equal([[{ remoteJid: jid(contact), fromMe: false, id: inboundId }]]);

    const presence = await http("POST", `/v1/connections/${slug}/chats/${encodeURIComponent(contact)}/presence`, { headers: { authorization: `Bearer ${key}` }, body: { state: "typing" } });
    expect(presence.status).to.equal(204);
    expect(lastCall("sendPresenceUpdate").args).to.deep.equal(["composing", jid(contact)]);
    // A contact known only by LID.
    const byLid = await http("POST", `/v1/connections/${slug}/chats/lid:123456789/presence`, { headers: { authorization: `Bearer ${key}` }, body: { state: "recording" } });
    expect(byLid.status).to.equal(204);
    expect(lastCall("sendPresenceUpdate").args).to.deep.equal(["recording", "123456789@lid"]);
  });

  it("edits and deletes our text for everyone, and sends a poll", async () => {
    const contact = uniquePhone("+1559");
    const sent = await expectOk(client.messages.send({ body: { connection: slug, to: contact, body: "teh text" } }));
    const ours = await handedOff(sent.id);
    const ourKey = { remoteJid: jid(contact), fromMe: true, id: ours.provider_message_id };
    await expectOk(client.conversations.edit({ params: { id: sent.id }, body: { body: "the text" } }));
    expect(lastCall("sendMessage").args.slice(0, 2)).to.deep.equal([jid(contact), { text: "the text", edit: ourKey }]);
    await expectOk(client.conversations.revoke({ params: { id: sent.id } }));
    expect(lastCall("sendMessage").args.slice(0, 2)).to.deep.equal([jid(contact), { delete: ourKey }]);

    const poll = await expectOk(client.conversations.poll({ body: { connection: slug, to: contact, question: "Lunch?", options: ["pizza", "salad"], selectable: 1 } }));
    await handedOff(poll.id);
    expect(lastCall("sendMessage").args.slice(0, 2)).to.deep.equal([jid(contact), { poll: { name: "Lunch?", values: ["pizza", "salad"], selectableCount: 1 } }]);
  });

  it("downloads a contact's photo with its sealed media key, streamed; 410 once the network no longer has it", async () => {
    const contact = uniquePhone("+1559");
    const image = { url: "https://mmg.whatsapp.net/d/f/photo.enc", mimetype: "image/jpeg", mediaKey: Buffer.from("k".repeat(32)).toString("base64"), caption: "look" };
    const photoId = upsert({ remoteJid: jid(contact), fromMe: false }, { imageMessage: image });
    const photo = await recorded(photoId);
    const [sealed] = (await testEnv().gateway.ctx.db.query(`SELECT message_sealed FROM baileys_messages WHERE network_id = $1`, [photoId])) as { message_sealed: string }[];
    expect(sealed!.message_sealed).to.be.a("string").and.not.contain("mediaKey");
    standIn.world.media.set(photoId, Buffer.alloc(3000, 9));
    const res = await fetch(`${testEnv().baseUrl}/v1/messages/${photo.id}/media`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("image/jpeg");
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.alloc(3000, 9))).to.equal(true);
    const asked = lastCall("downloadMedia").args[0] as { key: { id: string }; message: { imageMessage: { mediaKey: unknown } } };
    expect(asked.key.id).to.equal(photoId);
    expect(asked.message.imageMessage.mediaKey).to.not.equal(undefined);

    standIn.world.media.delete(photoId);
    const gone = await http("GET", `/v1/messages/${photo.id}/media`, { headers: { authorization: `Bearer ${key}` } });
    expect(gone.status).to.equal(410);
  });

  /** A contact's vote as their phone encrypts it: AES-GCM under a key derived from the poll's secret (the library's decryptPollVote, reversed). */
  function encryptedVote(pollId: string, creatorJid: string, voterJid: string, options: string[]) {
    const sign = Buffer.concat([Buffer.from(pollId), Buffer.from(creatorJid), Buffer.from(voterJid), Buffer.from("Poll Vote"), Buffer.from([1])]);
    const key0 = createHmac("sha256", Buffer.alloc(32)).update(pollSecret(pollId)).digest();
    const key = createHmac("sha256", key0).update(sign).digest();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(Buffer.from(`${pollId}\u0000${voterJid}`));
    const plain = proto.Message.PollVoteMessage.encode({ selectedOptions: options.map((o) => createHash("sha256").update(o).digest()) }).finish();
    return { encPayload: Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]), encIv: iv };
  }

  it("decrypts a contact's poll vote with the poll's secret and tallies it", async () => {
    const contact = uniquePhone("+1559");
    const poll = await expectOk(client.conversations.poll({ body: { connection: slug, to: contact, question: "Where?", options: ["here", "there", "nowhere"], selectable: 2 } }));
    const sent = await handedOff(poll.id);
    const pollId = sent.provider_message_id!;
    const me = `${digits(socket.user!.id.split(":")[0]!)}@s.whatsapp.net`;
    const vote = encryptedVote(pollId, me, jid(contact), ["there", "nowhere"]);
    upsert({ remoteJid: jid(contact), fromMe: false }, { pollUpdateMessage: { pollCreationMessageKey: { remoteJid: jid(contact), fromMe: true, id: pollId }, vote } });
    const tallied = await waitFor(() => expectOk(client.messages.get({ params: { id: poll.id } })), (m) => m.poll!.options.some((o) => o.votes > 0));
    expect(tallied.poll!.options).to.deep.equal([{ name: "here", votes: 0 }, { name: "there", votes: 1 }, { name: "nowhere", votes: 1 }]);
    expect((await eventsOf(workspaceId, "message.poll_vote")).map((e) => e.data)).to.deep.include({ message_id: poll.id, from: contact, options: ["there", "nowhere"] });
  });

  it("turns a contact's reaction, edit, revoke and typing into events and updates the record", async () => {
    const contact = uniquePhone("+1559");
    const inboundId = upsert({ remoteJid: jid(contact), fromMe: false }, { conversation: "helo" });
    const inbound = await recorded(inboundId);
    const sent = await expectOk(client.messages.send({ body: { connection: slug, to: contact, body: "hello!" } }));
    const ours = await handedOff(sent.id);

    upsert({ remoteJid: jid(contact), fromMe: false }, { reactionMessage: { key: { remoteJid: jid(contact), fromMe: true, id: ours.provider_message_id }, text: "❤️" } });
    await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (m) => m.reactions["❤️"] === 1);
    upsert({ remoteJid: jid(contact), fromMe: false }, { protocolMessage: { type: 14, key: { remoteJid: jid(contact), fromMe: false, id: inboundId }, editedMessage: { conversation: "hello" } } });
    const edited = await waitFor(() => expectOk(client.messages.get({ params: { id: inbound.id } })), (m) => m.edited_at !== null);
    expect(edited.body).to.equal("hello");
    upsert({ remoteJid: jid(contact), fromMe: false }, { protocolMessage: { type: 0, key: { remoteJid: jid(contact), fromMe: false, id: inboundId } } });
    await waitFor(() => expectOk(client.messages.get({ params: { id: inbound.id } })), (m) => m.revoked_at !== null);
    socket.emit("presence.update", { id: jid(contact), presences: { [jid(contact)]: { lastKnownPresence: "composing" } } });
    socket.emit("presence.update", { id: jid(contact), presences: { [jid(contact)]: { lastKnownPresence: "available" } } });
    const typing = await waitFor(() => eventsOf(workspaceId, "chat.presence"), (e) => e.some((x) => x.data.from === contact));
    expect(typing.filter((x) => x.data.from === contact).map((x) => x.data)).to.deep.equal([{ chat: contact, from: contact, state: "typing" }]);
    expect((await eventsOf(workspaceId, "message.reaction")).map((e) => e.data)).to.deep.include({ message_id: sent.id, from: contact, emoji: "❤️" });
    // None of these is a message of its own.
    const all = (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data;
    expect(all.filter((m) => m.from === contact)).to.have.length(1);
  });
});
