// Inbound group messages on both engines: the message names the group (`to: {group}`) and the
// participant who wrote it (`from`: their number where the network gives it, else `lid:<digits>`;
// their LID beside the number in `metadata.from_lid`), as one-to-one messages do; and the chat
// list files them under the group (`group:<id>`), not under the participant.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { Message } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { liveSocket, pairBaileys, uniqueLid } from "./support/baileys.js";
import type { StandInSocket } from "./support/baileys-stand-in.js";
import { eventsOf } from "./support/conversations.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const digits = (phone: string) => phone.replace(/\D/g, "");
const newGroup = () => `120363${String(randomBytes(5).readUIntBE(0, 5)).padStart(12, "0")}@g.us`;

describe("inbound group messages name the group and the participant", function () {
  this.timeout(60_000);
  let client: Client;
  let workspaceId: string;

  before(async () => {
    const ws = await newWorkspace("pro");
    workspaceId = ws.id;
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
  });

  const recorded = (slug: string, providerId: string) =>
    waitFor(
      async () => (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data.find((m) => m.provider_message_id === providerId),
      (m) => m !== undefined,
    ) as Promise<Message>;
  const chats = async (slug: string) => (await expectOk(client.conversations.listChats({ params: { connection: slug }, query: { limit: 100 } }))).data;

  /** Both participants' messages are filed under the group, and its event carries the same names. */
  async function expectFiledUnderGroup(slug: string, group: string, byNumber: Message, participant: string): Promise<void> {
    const listed = await chats(slug);
    const chat = listed.find((c) => c.chat === `group:${group}`);
    expect(chat, "the group's chat").to.not.equal(undefined);
    expect(chat!.unread_count).to.equal(2);
    expect(listed.some((c) => c.chat === participant), "a chat for the participant").to.equal(false);
    const received = (await eventsOf(workspaceId, "message.received")).find((e) => e.data.id === byNumber.id);
    expect(received!.data).to.deep.include({ from: participant, to: { group }, metadata: byNumber.metadata });
  }

  it("on the sandbox", async () => {
    const slug = `grp-in-${randomBytes(3).toString("hex")}`;
    const linked = uniquePhone("+1556");
    await pairConnection(client, slug, linked);
    const group = newGroup();
    const participant = uniquePhone();
    const lid = `lid:${uniqueLid()}`;

    const posted = await sandbox("POST", "/inbound", { to: linked, from: participant, from_lid: lid, group, body: "in the group" });
    expect(posted.status).to.equal(202);
    const byNumber = await recorded(slug, posted.json.provider_message_id as string);
    expect(byNumber).to.deep.include({ direction: "inbound", from: participant, to: { group }, body: "in the group", metadata: { from_lid: lid } });

    // A participant the network names only by LID: that is their address.
    const lidOnly = `lid:${uniqueLid()}`;
    const second = await sandbox("POST", "/inbound", { to: linked, from: lidOnly, group, body: "known by LID" });
    expect(await recorded(slug, second.json.provider_message_id as string)).to.deep.include({ from: lidOnly, to: { group }, metadata: {} });

    await expectFiledUnderGroup(slug, group, byNumber, participant);
    // The LID is a LID: anything else is refused and nothing is recorded.
    expect((await sandbox("POST", "/inbound", { to: linked, from: participant, from_lid: 7, group, body: "x" })).status).to.equal(400);
  });

  it("on the Baileys engine", async () => {
    const slug = `bly-grp-in-${randomBytes(3).toString("hex")}`;
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    const socket: StandInSocket = await liveSocket(connection.id, (s) => s.user !== undefined);
    const group = newGroup();
    const participant = uniquePhone();
    const lid = uniqueLid();
    const upsert = (key: Record<string, unknown>, text: string) => {
      const id = `IN${randomBytes(8).toString("hex").toUpperCase()}`;
      socket.emit("messages.upsert", {
        type: "notify",
        messages: [{ key: { id, remoteJid: group, fromMe: false, ...key }, message: { conversation: text }, messageTimestamp: Math.floor(Date.now() / 1000) }],
      });
      return id;
    };

    // A LID-addressed group: the participant by LID, their number beside it (v7's participantAlt).
    const byNumber = await recorded(slug, upsert({ participant: `${lid}@lid`, participantAlt: `${digits(participant)}@s.whatsapp.net` }, "in the group"));
    expect(byNumber).to.deep.include({ direction: "inbound", from: participant, to: { group }, body: "in the group", metadata: { from_lid: `lid:${lid}` } });

    const unknown = uniqueLid();
    const byLid = await recorded(slug, upsert({ participant: `${unknown}@lid` }, "known by LID"));
    expect(byLid).to.deep.include({ from: `lid:${unknown}`, to: { group } });

    await expectFiledUnderGroup(slug, group, byNumber, participant);
  });
});
