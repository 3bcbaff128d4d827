// Conversations over real HTTP on the sandbox (docs/conversations.md): replies quoting a
// message, reactions, edits and revokes both ways, reads, presence, polls and votes, the chat list;
// each limit at its last valid and first invalid value, and a refusal that changes nothing.
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http } from "./support/actors.js";
import { eventsOf, inboundFrom, linkedConnection, receivedBy, uniquePhone, waitForMessage, type Linked } from "./support/conversations.js";
import { mcpClient } from "./support/mcp.js";
import { sandbox } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;

describe("conversations", () => {
  let c: Linked;
  const auth = () => ({ authorization: `Bearer ${c.key}` });
  before(async () => {
    c = await linkedConnection();
  });

  async function sentText(to: string, body = "our text") {
    const sent = await expectOk(c.client.messages.send({ body: { connection: c.slug, to, body } }));
    return waitForMessage(c, sent.id, (m) => m.provider_message_id !== null && ["sent", "delivered", "read"].includes(m.status));
  }

  describe("replies", () => {
    it("replays an Idempotency-Key with the same body, refuses it with another quoted message, and writes once", async () => {
      const contact = uniquePhone();
      const first = await inboundFrom(c, contact, { body: "one" });
      const second = await inboundFrom(c, contact, { body: "two" });
      const headers = { ...auth(), "idempotency-key": `reply-${first.id}` };
      const a = await http("POST", `/v1/messages/${first.id}/reply`, { headers, body: { body: "ok" } });
      const b = await http("POST", `/v1/messages/${first.id}/reply`, { headers, body: { body: "ok" } });
      expect(a.status).to.equal(202);
      expect(b.status).to.equal(202);
      expect(b.headers.get("idempotent-replayed")).to.equal("true");
      expect(b.json.id).to.equal(a.json.id);
      const other = await http("POST", `/v1/messages/${second.id}/reply`, { headers, body: { body: "ok" } });
      expect(other.status).to.equal(422);
      const [row] = (await db().query(`SELECT count(*)::int AS n FROM messages WHERE reply_to = $1`, [first.id])) as { n: number }[];
      expect(row!.n).to.equal(1);
    });

    it("holds a reply to the limits of a send: body 4096 characters, not 4097; no content is refused", async () => {
      const inbound = await inboundFrom(c, uniquePhone());
      const ok = await http("POST", `/v1/messages/${inbound.id}/reply`, { headers: auth(), body: { body: "😀".repeat(4096) } });
      expect(ok.status).to.equal(202);
      for (const body of [{ body: "x".repeat(4097) }, {}, { body: "" }, { body: "x", to: "+15550009999" }]) {
        const res = await http("POST", `/v1/messages/${inbound.id}/reply`, { headers: auth(), body });
        expect(res.status, JSON.stringify(body).slice(0, 50)).to.equal(400);
        expect(res.json.code).to.equal("validation_failed");
      }
      const [row] = (await db().query(`SELECT count(*)::int AS n FROM messages WHERE reply_to = $1`, [inbound.id])) as { n: number }[];
      expect(row!.n).to.equal(1);
    });

    it("answers 404 for a message of another workspace or none, and 409 while the quoted message has no network id", async () => {
      const other = await linkedConnection();
      const theirs = await inboundFrom(other, uniquePhone());
      expect((await http("POST", `/v1/messages/${theirs.id}/reply`, { headers: auth(), body: { body: "x" } })).status).to.equal(404);
      expect((await http("POST", `/v1/messages/msg_nothing/reply`, { headers: auth(), body: { body: "x" } })).status).to.equal(404);
      const scheduled = await expectOk(
        c.client.messages.send({ body: { connection: c.slug, to: uniquePhone(), body: "later", send_at: new Date(Date.now() + 3_600_000).toISOString() } }),
      );
      const res = await http("POST", `/v1/messages/${scheduled.id}/reply`, { headers: auth(), body: { body: "x" } });
      expect(res.status).to.equal(409);
      expect(res.json.detail).to.match(/no network id/);
    });
  });

  describe("reactions", () => {
    it("reacts with one emoji and removes it with \"\", on the record and on the network", async () => {
      const contact = uniquePhone();
      const inbound = await inboundFrom(c, contact);
      const res = await expectOk(c.client.conversations.react({ params: { id: inbound.id }, body: { emoji: "👍🏽" } }));
      expect(res.message.reactions).to.deep.equal({ "👍🏽": 1 });
      const removed = await expectOk(c.client.conversations.react({ params: { id: inbound.id }, body: { emoji: "" } }));
      expect(removed.message.reactions).to.deep.equal({});
      const got = await receivedBy(contact);
      expect(got.map((r) => [r.kind, r.message_id, r.emoji])).to.deep.equal([
        ["reaction", inbound.id, "👍🏽"],
        ["reaction", inbound.id, ""],
      ]);
    });

    it("takes one emoji of any kind and refuses anything else with 400, changing nothing", async () => {
      const inbound = await inboundFrom(c, uniquePhone());
      for (const emoji of ["❤️", "👨‍👩‍👧‍👦", "🇫🇷", "1️⃣", "😀"]) {
        expect((await http("POST", `/v1/messages/${inbound.id}/reactions`, { headers: auth(), body: { emoji } })).status, emoji).to.equal(202);
      }
      for (const body of [{ emoji: "a" }, { emoji: "😀😀" }, { emoji: "1" }, { emoji: " " }, { emoji: "😀 " }, {}, { emoji: "😀", extra: 1 }, { emoji: "x".repeat(33) }]) {
        const res = await http("POST", `/v1/messages/${inbound.id}/reactions`, { headers: auth(), body });
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.json.code).to.equal("validation_failed");
      }
      expect((await expectOk(c.client.messages.get({ params: { id: inbound.id } }))).reactions).to.deep.equal({ "😀": 1 });
    });

    it("answers 409 for a message without a network id and 404 for an unknown one", async () => {
      const scheduled = await expectOk(
        c.client.messages.send({ body: { connection: c.slug, to: uniquePhone(), body: "later", send_at: new Date(Date.now() + 3_600_000).toISOString() } }),
      );
      const res = await http("POST", `/v1/messages/${scheduled.id}/reactions`, { headers: auth(), body: { emoji: "👍" } });
      expect(res.status).to.equal(409);
      expect(res.json.code).to.equal("invalid_state");
      expect((await http("POST", `/v1/messages/msg_nothing/reactions`, { headers: auth(), body: { emoji: "👍" } })).status).to.equal(404);
    });

    it("records a contact's reaction as message.reaction, counted per emoji, once however often it is reported", async () => {
      const contact = uniquePhone();
      const ours = await sentText(contact);
      await sandbox("POST", "/faults", { duplicate_callbacks: true });
      try {
        expect((await sandbox("POST", "/react", { from: contact, to: c.phone, message_id: ours.id, emoji: "🎉" })).status).to.equal(202);
        await waitForMessage(c, ours.id, (m) => m.reactions["🎉"] === 1);
        await waitFor(() => eventsOf(c.ws.id, "message.reaction"), (e) => e.some((x) => x.data.message_id === ours.id));
        expect((await sandbox("POST", "/react", { from: contact, to: c.phone, message_id: ours.id, emoji: "" })).status).to.equal(202);
        await waitForMessage(c, ours.id, (m) => Object.keys(m.reactions).length === 0);
      } finally {
        await sandbox("POST", "/faults", { duplicate_callbacks: false });
      }
      const events = (await eventsOf(c.ws.id, "message.reaction")).filter((e) => e.data.message_id === ours.id);
      expect(events.map((e) => e.data)).to.deep.equal([
        { message_id: ours.id, from: contact, emoji: "🎉" },
        { message_id: ours.id, from: contact, emoji: "" },
      ]);
    });
  });

  describe("edits and revokes", () => {
    it("edits our text within 15 minutes and not past them, naming the window", async () => {
      const contact = uniquePhone();
      const ours = await sentText(contact);
      const res = await expectOk(c.client.conversations.edit({ params: { id: ours.id }, body: { body: "corrected" } }));
      expect(res.message.body).to.equal("corrected");
      expect(res.message.edited_at).to.be.a("string");
      const edits = (await receivedBy(contact)).filter((r) => r.kind === "edit");
      expect(edits.map((r) => [r.message_id, r.body])).to.deep.equal([[ours.id, "corrected"]]);
      // The last valid moment, then the first invalid one (the hand-off moved back in time).
      await db().query(`UPDATE message_timeline SET at = now() - interval '14 minutes 58 seconds' WHERE message_id = $1`, [ours.id]);
      expect((await http("POST", `/v1/messages/${ours.id}/edit`, { headers: auth(), body: { body: "again" } })).status).to.equal(202);
      await db().query(`UPDATE message_timeline SET at = now() - interval '15 minutes 1 second' WHERE message_id = $1`, [ours.id]);
      const late = await http("POST", `/v1/messages/${ours.id}/edit`, { headers: auth(), body: { body: "too late" } });
      expect(late.status).to.equal(409);
      expect(late.json.detail).to.match(/15 minutes/);
      expect((await expectOk(c.client.messages.get({ params: { id: ours.id } }))).body).to.equal("again");
    });

    it("edits only our own text, with a body of 1-4096 characters", async () => {
      const contact = uniquePhone();
      const ours = await sentText(contact);
      expect((await http("POST", `/v1/messages/${ours.id}/edit`, { headers: auth(), body: { body: "😀".repeat(4096) } })).status).to.equal(202);
      for (const body of [{ body: "" }, { body: "x".repeat(4097) }, {}]) {
        expect((await http("POST", `/v1/messages/${ours.id}/edit`, { headers: auth(), body })).status, JSON.stringify(body).slice(0, 40)).to.equal(400);
      }
      const inbound = await inboundFrom(c, contact);
      const theirs = await http("POST", `/v1/messages/${inbound.id}/edit`, { headers: auth(), body: { body: "mine now" } });
      expect(theirs.status).to.equal(409);
      expect(theirs.json.detail).to.match(/text message we sent/);
    });

    it("revokes our message within 48 hours, keeping its record and timeline, and not past them", async () => {
      const contact = uniquePhone();
      const ours = await sentText(contact);
      const res = await expectOk(c.client.conversations.revoke({ params: { id: ours.id } }));
      expect(res.message.revoked_at).to.be.a("string");
      const kept = await expectOk(c.client.messages.get({ params: { id: ours.id } }));
      expect(kept.body).to.equal("our text");
      expect(kept.timeline.map((t) => t.status)).to.include("submitted");
      expect((await receivedBy(contact)).filter((r) => r.kind === "revoke").map((r) => r.message_id)).to.deep.equal([ours.id]);
      expect((await http("POST", `/v1/messages/${ours.id}/revoke`, { headers: auth() })).status).to.equal(409);

      const older = await sentText(contact, "older");
      await db().query(`UPDATE message_timeline SET at = now() - interval '47 hours 59 minutes 58 seconds' WHERE message_id = $1`, [older.id]);
      expect((await http("POST", `/v1/messages/${older.id}/revoke`, { headers: auth() })).status).to.equal(202);
      const oldest = await sentText(contact, "oldest");
      await db().query(`UPDATE message_timeline SET at = now() - interval '48 hours 1 second' WHERE message_id = $1`, [oldest.id]);
      const late = await http("POST", `/v1/messages/${oldest.id}/revoke`, { headers: auth() });
      expect(late.status).to.equal(409);
      expect(late.json.detail).to.match(/48 hours/);
      expect((await expectOk(c.client.messages.get({ params: { id: oldest.id } }))).revoked_at).to.equal(null);
      const inbound = await inboundFrom(c, contact);
      expect((await http("POST", `/v1/messages/${inbound.id}/revoke`, { headers: auth() })).status).to.equal(409);
    });

    it("records a contact's edit and revoke of their own message, and ignores them on another's", async () => {
      const contact = uniquePhone();
      const inbound = await inboundFrom(c, contact, { body: "typo" });
      expect((await sandbox("POST", "/edit", { from: contact, to: c.phone, message_id: inbound.id, body: "fixed" })).status).to.equal(202);
      const edited = await waitForMessage(c, inbound.id, (m) => m.edited_at !== null);
      expect(edited.body).to.equal("fixed");
      expect((await sandbox("POST", "/revoke", { from: contact, to: c.phone, message_id: inbound.id })).status).to.equal(202);
      const revoked = await waitForMessage(c, inbound.id, (m) => m.revoked_at !== null);
      expect(revoked.timeline.length).to.be.greaterThan(0);
      const kinds = async () => [...(await eventsOf(c.ws.id, "message.edited")), ...(await eventsOf(c.ws.id, "message.revoked"))].filter((e) => e.data.message_id === inbound.id);
      expect((await kinds()).map((e) => e.data)).to.deep.equal([
        { message_id: inbound.id, from: contact },
        { message_id: inbound.id, from: contact },
      ]);
      // Someone else cannot edit the contact's message: the report changes nothing.
      const ours = await sentText(contact);
      expect((await sandbox("POST", "/edit", { from: contact, to: c.phone, message_id: ours.id, body: "hijack" })).status).to.equal(202);
      expect((await sandbox("POST", "/react", { from: contact, to: c.phone, message_id: ours.id, emoji: "👀" })).status).to.equal(202);
      const after = await waitForMessage(c, ours.id, (m) => m.reactions["👀"] === 1);
      expect(after.body).to.equal("our text");
      expect(after.edited_at).to.equal(null);
    });
  });

  describe("reads and presence", () => {
    it("marks an inbound message and the earlier ones of its chat read, on the network, and the chat's unread count falls", async () => {
      const contact = uniquePhone();
      const a = await inboundFrom(c, contact, { body: "a" });
      const b = await inboundFrom(c, contact, { body: "b" });
      const later = await inboundFrom(c, contact, { body: "c" });
      const chats = async () => (await expectOk(c.client.conversations.listChats({ params: { connection: c.slug }, query: { limit: 100 } }))).data;
      expect((await chats()).find((x) => x.chat === contact)).to.deep.include({ unread_count: 3 });
      const res = await expectOk(c.client.conversations.markRead({ params: { id: b.id } }));
      expect(res).to.deep.equal({ object: "read_receipt", message_id: b.id, chat: contact, marked: 2 });
      expect((await chats()).find((x) => x.chat === contact)).to.deep.include({ unread_count: 1 });
      expect((await receivedBy(contact)).filter((r) => r.kind === "read").map((r) => r.message_id)).to.deep.equal([a.id, b.id]);
      expect((await expectOk(c.client.conversations.markRead({ params: { id: b.id } }))).marked).to.equal(0);
      expect((await expectOk(c.client.conversations.markRead({ params: { id: later.id } }))).marked).to.equal(1);
      expect((await http("POST", `/v1/messages/msg_nothing/read`, { headers: auth() })).status).to.equal(404);
    });

    it("shows typing to a contact (204), refuses an unknown state, and answers 409 when the connection is not connected", async () => {
      const contact = uniquePhone();
      const path = `/v1/connections/${c.slug}/chats/${encodeURIComponent(contact)}/presence`;
      for (const state of ["typing", "recording", "paused"]) expect((await http("POST", path, { headers: auth(), body: { state } })).status).to.equal(204);
      expect((await receivedBy(contact)).filter((r) => r.kind === "presence").map((r) => r.state)).to.deep.equal(["typing", "recording", "paused"]);
      for (const body of [{ state: "online" }, {}, { state: "typing", extra: true }]) expect((await http("POST", path, { headers: auth(), body })).status).to.equal(400);
      expect((await http("POST", `/v1/connections/nope/chats/${encodeURIComponent(contact)}/presence`, { headers: auth(), body: { state: "typing" } })).status).to.equal(404);
      await expectOk(c.client.connections.create({ body: { slug: `${c.slug}-x` } }));
      const idle = await http("POST", `/v1/connections/${c.slug}-x/chats/${encodeURIComponent(contact)}/presence`, { headers: auth(), body: { state: "typing" } });
      expect(idle.status).to.equal(409);
      expect(idle.json.code).to.equal("connection_not_ready");
    });

    it("reports a contact's typing as chat.presence", async () => {
      const contact = uniquePhone();
      expect((await sandbox("POST", "/typing", { from: contact, to: c.phone, state: "typing" })).status).to.equal(202);
      const events = await waitFor(() => eventsOf(c.ws.id, "chat.presence"), (e) => e.some((x) => x.data.from === contact));
      expect(events.find((x) => x.data.from === contact)!.data).to.deep.equal({ chat: contact, from: contact, state: "typing" });
      expect((await sandbox("POST", "/typing", { from: contact, to: c.phone, state: "dancing" })).status).to.equal(400);
    });
  });

  describe("chats", () => {
    it("lists a connection's chats newest first, one per contact, with the last message, paginated", async () => {
      const fresh = await linkedConnection();
      const [x, y, z] = [uniquePhone(), uniquePhone(), uniquePhone()];
      await inboundFrom(fresh, x);
      await inboundFrom(fresh, y);
      const last = await inboundFrom(fresh, z);
      await inboundFrom(fresh, x, { body: "again" });
      const first = await expectOk(fresh.client.conversations.listChats({ params: { connection: fresh.slug }, query: { limit: 2 } }));
      expect(first.data.map((ch) => ch.chat)).to.deep.equal([x, z]);
      expect(first.data[1]!.last_message).to.deep.include({ id: last.id, direction: "inbound", status: "delivered" });
      expect(first.data[0]!.unread_count).to.equal(2);
      const second = await expectOk(fresh.client.conversations.listChats({ params: { connection: fresh.slug }, query: { limit: 2, cursor: first.next_cursor! } }));
      expect(second.data.map((ch) => ch.chat)).to.deep.equal([y]);
      expect(second.next_cursor).to.equal(null);
      for (const limit of ["0", "101", "x"]) {
        expect((await http("GET", `/v1/connections/${fresh.slug}/chats?limit=${limit}`, { headers: { authorization: `Bearer ${fresh.key}` } })).status).to.equal(400);
      }
      expect((await http("GET", `/v1/connections/${fresh.slug}/chats?limit=100`, { headers: { authorization: `Bearer ${fresh.key}` } })).status).to.equal(200);
      expect((await http("GET", `/v1/connections/${fresh.slug}/chats`, { headers: auth() })).status).to.equal(404);
    });
  });

  describe("tools (MCP)", () => {
    it("lists chats, and reacts and marks read only once confirmed, never answering content", async () => {
      const contact = uniquePhone();
      const inbound = await inboundFrom(c, contact, { body: "secret words" });
      const { key } = await c.ws.key(["mcp:read", "mcp:write"]);
      const client = await mcpClient(key, "2025-11-25");
      try {
        const call = async (name: string, args: Record<string, unknown>) => {
          const result = await client.callTool({ name, arguments: args });
          expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).to.not.equal(true);
          expect(JSON.stringify(result)).to.not.contain("secret words");
          return result.structuredContent as Record<string, unknown>;
        };
        const chats = (await call("list_chats", { connection: c.slug, limit: 100 })).data as { chat: string; unread_count: number }[];
        expect(chats.find((x) => x.chat === contact)).to.deep.include({ unread_count: 1 });

        const preview = await call("react_to_message", { id: inbound.id, emoji: "🙏" });
        expect(preview).to.include({ preview: true, id: inbound.id, emoji: "🙏" });
        expect((await expectOk(c.client.messages.get({ params: { id: inbound.id } }))).reactions).to.deep.equal({});
        expect(await call("react_to_message", { id: inbound.id, emoji: "🙏", confirm: true })).to.include({ preview: false, done: "reacted" });
        expect((await expectOk(c.client.messages.get({ params: { id: inbound.id } }))).reactions).to.deep.equal({ "🙏": 1 });
        const notOne = await client.callTool({ name: "react_to_message", arguments: { id: inbound.id, emoji: "ok", confirm: true } });
        expect(notOne.isError).to.equal(true);

        expect(await call("mark_read", { id: inbound.id })).to.include({ preview: true, unread: 1, chat: contact });
        expect((await receivedBy(contact)).filter((r) => r.kind === "read")).to.have.length(0);
        expect(await call("mark_read", { id: inbound.id, confirm: true })).to.include({ preview: false, marked: 1 });
        expect((await receivedBy(contact)).filter((r) => r.kind === "read").map((r) => r.message_id)).to.deep.equal([inbound.id]);
      } finally {
        await client.close();
      }
    });
  });

  describe("polls", () => {
    it("sends a poll and tallies the contacts' votes, each voter's latest choice once", async () => {
      const contact = uniquePhone();
      const other = uniquePhone();
      const res = await expectOk(
        c.client.conversations.poll({ body: { connection: c.slug, to: contact, question: "Lunch?", options: ["pizza", "salad", "soup"], selectable: 2 } }),
      );
      expect(res.poll).to.deep.equal({ question: "Lunch?", options: [{ name: "pizza", votes: 0 }, { name: "salad", votes: 0 }, { name: "soup", votes: 0 }], selectable: 2 });
      await waitForMessage(c, res.id, (m) => m.provider_message_id !== null);
      const got = await waitFor(() => receivedBy(contact), (r) => r.length === 1);
      expect(got[0]).to.deep.include({ kind: "message", poll: { question: "Lunch?", options: ["pizza", "salad", "soup"], selectable: 2 } });
      expect((await sandbox("POST", "/vote", { from: contact, to: c.phone, message_id: res.id, options: ["pizza", "soup"] })).status).to.equal(202);
      await waitForMessage(c, res.id, (m) => m.poll!.options[0]!.votes === 1);
      expect((await sandbox("POST", "/vote", { from: contact, to: c.phone, message_id: res.id, options: ["salad"] })).status).to.equal(202);
      expect((await sandbox("POST", "/vote", { from: other, to: c.phone, message_id: res.id, options: ["salad"] })).status).to.equal(202);
      const tallied = await waitForMessage(c, res.id, (m) => m.poll!.options[1]!.votes === 2);
      expect(tallied.poll!.options).to.deep.equal([{ name: "pizza", votes: 0 }, { name: "salad", votes: 2 }, { name: "soup", votes: 0 }]);
      const votes = (await eventsOf(c.ws.id, "message.poll_vote")).filter((e) => e.data.message_id === res.id).map((e) => e.data);
      expect(votes).to.deep.equal([
        { message_id: res.id, from: contact, options: ["pizza", "soup"] },
        { message_id: res.id, from: contact, options: ["salad"] },
        { message_id: res.id, from: other, options: ["salad"] },
      ]);
      expect((await sandbox("POST", "/vote", { from: other, to: c.phone, message_id: res.id, options: ["pizza", "salad", "soup"] })).status).to.equal(400);
      expect((await sandbox("POST", "/vote", { from: other, to: c.phone, message_id: res.id, options: ["pasta"] })).status).to.equal(400);
    });

    it("holds a poll to its limits: question 1-255, 2-12 distinct options of 1-100, selectable 1..options", async () => {
      const to = uniquePhone();
      const ok = { connection: c.slug, to, question: "q", options: ["a", "b"] };
      const opts = (n: number) => Array.from({ length: n }, (_, i) => `option ${i}`);
      const cases: [string, unknown, number][] = [
        ["question 255", { ...ok, question: "😀".repeat(255) }, 202],
        ["question 256", { ...ok, question: "x".repeat(256) }, 400],
        ["question empty", { ...ok, question: "" }, 400],
        ["2 options", ok, 202],
        ["1 option", { ...ok, options: ["a"] }, 400],
        ["12 options", { ...ok, options: opts(12) }, 202],
        ["13 options", { ...ok, options: opts(13) }, 400],
        ["option 100", { ...ok, options: ["a", "😀".repeat(100)] }, 202],
        ["option 101", { ...ok, options: ["a", "x".repeat(101)] }, 400],
        ["option empty", { ...ok, options: ["a", ""] }, 400],
        ["duplicate options", { ...ok, options: ["a", "a"] }, 400],
        ["selectable = options", { ...ok, selectable: 2 }, 202],
        ["selectable > options", { ...ok, selectable: 3 }, 400],
        ["selectable 0", { ...ok, selectable: 0 }, 400],
        ["unknown field", { ...ok, body: "x" }, 400],
        ["unknown connection", { ...ok, connection: "nope" }, 400],
      ];
      const before = (await db().query(`SELECT count(*)::int AS n FROM messages WHERE poll IS NOT NULL AND recipient = to_jsonb($1::text)`, [to])) as { n: number }[];
      let accepted = 0;
      for (const [name, body, status] of cases) {
        const res = await http("POST", "/v1/messages/poll", { headers: auth(), body });
        expect(res.status, name).to.equal(status);
        if (status === 202) accepted++;
        else expect(res.json.code, name).to.equal("validation_failed");
      }
      const after = (await db().query(`SELECT count(*)::int AS n FROM messages WHERE poll IS NOT NULL AND recipient = to_jsonb($1::text)`, [to])) as { n: number }[];
      expect(after[0]!.n - before[0]!.n).to.equal(accepted);
    });
  });
});
