// Conversations on the Baileys engine, driven through the stand-in socket: each route maps to the
// library's call (a quote in sendMessage's options, react, edit, delete, readMessages,
// sendPresenceUpdate, a poll, downloadMediaMessage with the sealed media key), in the library's
// exact shapes. What a user sees of each, both ways, is the engine contract's
// (test/engine-contract.test.ts), run on this engine and the sandbox alike.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { Message } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Client } from "./support/actors.js";
import { standIn, type StandInSocket } from "./support/baileys-stand-in.js";
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

  // A contact's reactions, edits, revokes, votes and typing as events: the engine contract
  // (test/engine-contract.test.ts). What only this network reports: a contact coming online.
  it("reports a contact's typing, not their being online", async () => {
    const contact = uniquePhone("+1559");
    socket.emit("presence.update", { id: jid(contact), presences: { [jid(contact)]: { lastKnownPresence: "available" } } });
    socket.emit("presence.update", { id: jid(contact), presences: { [jid(contact)]: { lastKnownPresence: "composing" } } });
    const typing = await waitFor(() => eventsOf(workspaceId, "chat.presence"), (e) => e.some((x) => x.data.from === contact));
    expect(typing.filter((x) => x.data.from === contact).map((x) => x.data)).to.deep.equal([{ chat: contact, from: contact, state: "typing" }]);
  });
});
