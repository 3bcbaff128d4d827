// Groups on the Baileys engine, driven through the stand-in socket: every group route over HTTP
// reaches the library's group call (groupFetchAllParticipating, groupMetadata, groupCreate,
// groupParticipantsUpdate, groupUpdateSubject, groupUpdateDescription, groupSettingUpdate,
// groupLeave, groupInviteCode, groupRevokeInvite), answered as the library parses the network's
// answers and refusals; and the send path reads a group's metadata from the gateway's cache
// (PostgreSQL), so many sends to one group ask the network once.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Client } from "./support/actors.js";
import { standIn, type StandInGroup, type StandInSocket } from "./support/baileys-stand-in.js";
import { baileysEngine, liveSocket, pairBaileys, uniqueLid } from "./support/baileys.js";
import { uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

describe("Baileys engine: groups (stand-in socket)", function () {
  this.timeout(120_000);
  let client: Client;

  before(async () => {
    const ws = await newWorkspace("pro");
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
  });

  it("makes at most one metadata request to the network for 100 sends to one group, and caches its answer", async () => {
    const slug = `bly-grp-${randomBytes(3).toString("hex")}`;
    const phone = uniquePhone("+1559");
    const { connection } = await pairBaileys(client, slug, phone);
    const socket = await liveSocket(connection.id, (s) => s.user !== undefined);
    const group = `120363${String(randomBytes(5).readUIntBE(0, 5)).padStart(12, "0")}@g.us`;

    const sent = await Promise.all(
      Array.from({ length: 100 }, (_, i) => expectOk(client.messages.send({ body: { connection: slug, to: { group }, body: `shift ${i}` } }))),
    );
    await waitFor(
      async () => socket.calls.filter((c) => c.method === "sendMessage" && c.args[0] === group).length,
      (n) => n === 100,
      90_000,
    );
    expect(sent).to.have.length(100);
    expect(socket.calls.filter((c) => c.method === "groupMetadata"), "metadata requests").to.have.length.at.most(1);
    // The answer was reported and cached: the group's page reads it with no request either.
    const cached = await waitFor(
      async () => (await testEnv().gateway.ctx.db.query(`SELECT subject, participants FROM group_metadata WHERE connection_id = $1 AND group_id = $2`, [connection.id, group]))[0],
      (row) => row !== undefined,
    );
    // The stand-in network answers with one LID participant.
    expect(cached.subject).to.equal("stand-in group");
    expect(cached.participants).to.deep.equal([{ phone: null, lid: `${group.split("@")[0]}1@lid`, role: "member" }]);
  });
});

const jidOf = (phone: string) => `${phone.replace(/\D/g, "")}@s.whatsapp.net`;
const newGroupJid = () => `120363${String(randomBytes(5).readUIntBE(0, 5)).padStart(12, "0")}@g.us`;

describe("Baileys engine: the group routes (stand-in socket)", function () {
  this.timeout(120_000);
  let client: Client;
  let auth: Record<string, string>;
  let slug: string;
  let linked: string;
  let connectionId: string;
  let ownLid: string;
  let socket: StandInSocket;
  const path = (group: string, tail = "") => `/v1/connections/${slug}/groups/${encodeURIComponent(group)}${tail}`;
  const callsOf = (method: string) => socket.calls.filter((c) => c.method === method);

  /** A group on the stand-in network with the linked number in it as `role`, and `others` as members. */
  function networkGroup(role: "admin" | "superadmin" | null, others: string[] = [], change: Partial<StandInGroup> = {}): string {
    const jid = newGroupJid();
    standIn.world.groups.set(jid, {
      subject: `Crew ${randomBytes(2).toString("hex")}`,
      desc: undefined,
      descId: undefined,
      announce: false,
      restrict: false,
      creation: Math.floor(Date.now() / 1000) - 60,
      owner: jidOf(linked),
      participants: new Map<string, "admin" | "superadmin" | null>([[jidOf(linked), role], ...others.map((p) => [jidOf(p), null] as [string, null])]),
      inviteCode: "FIRSTCODE0000000000000",
      ...change,
    });
    return jid;
  }

  before(async () => {
    const ws = await newWorkspace("pro");
    const issued = await ws.key(["connections:read", "connections:write"]);
    client = issued.client;
    auth = { authorization: `Bearer ${issued.key}` };
    slug = `bly-grp-${randomBytes(3).toString("hex")}`;
    linked = uniquePhone("+1557");
    const paired = await pairBaileys(client, slug, linked);
    connectionId = paired.connection.id;
    ownLid = `${paired.lid}@lid`;
    socket = await liveSocket(connectionId, (s) => s.user !== undefined);
  });

  it("lists the number's groups with one network call and no metadata query per group, then reads one with roles", async () => {
    const other = uniquePhone();
    const mine = networkGroup("admin", [other]);
    const member = networkGroup(null);
    const notMine = newGroupJid();
    standIn.world.groups.set(notMine, { ...standIn.world.groups.get(member)!, participants: new Map([[jidOf(other), "superadmin"]]) });

    const listed = await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } }));
    const ids = listed.data.map((g) => g.id);
    expect(ids).to.include.members([mine, member]);
    expect(ids).to.not.include(notMine);
    expect(listed.data.find((g) => g.id === mine)).to.include({ subject: standIn.world.groups.get(mine)!.subject, size: 2, own_role: "admin" });
    expect(listed.data.find((g) => g.id === member)).to.include({ own_role: "member" });
    expect(callsOf("groupFetchAllParticipating")).to.have.length(1);
    // The listing's groups.update echo carries whole metadata: no query per group, and no joins recorded.
    await new Promise((r) => setTimeout(r, 300));
    expect(callsOf("groupMetadata"), "metadata queries").to.have.length(0);
    const joined = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM events WHERE connection_id = $1 AND type = 'group.joined'`, [connectionId]);
    expect(joined, "group.joined events").to.have.length(0);

    const got = await expectOk(client.groups.get({ params: { connection: slug, group: mine } }));
    expect(got.participants).to.have.deep.members([
      { phone: linked, lid: null, role: "admin" },
      { phone: other, lid: null, role: "member" },
    ]);
    // Not in the group: the network answers `forbidden`, the API 404.
    const res = await http("GET", path(notMine), { headers: auth });
    expect(res.status).to.equal(404);
    expect(res.json.code).to.equal("not_found");
  });

  // The outcomes per participant and the members read back: the engine contract (test/engine-contract.test.ts).
  it("creates a group through the library's groupCreate, with the participants' addresses", async () => {
    const [plain, off] = [uniquePhone(), uniquePhone()];
    standIn.world.offNetwork.add(jidOf(off));
    const created = await expectOk(client.groups.create({ params: { connection: slug }, body: { subject: "Night shift", participants: [plain, off, linked] } }));
    // The linked number is not asked for (it is the creator); a number off the network is, and is answered so.
    expect(callsOf("groupCreate").at(-1)!.args).to.deep.equal(["Night shift", [plain, off].map(jidOf)]);
    expect(created.outcomes.map((o) => o.outcome)).to.deep.equal(["added", "not_on_network", "already_member"]);
  });

  it("adds, removes, promotes and demotes with an outcome per participant", async () => {
    const [a, b, outsider, invite] = [uniquePhone(), uniquePhone(), uniquePhone(), uniquePhone()];
    standIn.world.groupAdd.set(jidOf(invite), "403");
    const group = networkGroup("admin", [a]);
    const act = async (action: "add" | "remove" | "promote" | "demote", participants: string[]) =>
      (await expectOk(client.groups.participants({ params: { connection: slug, group }, body: { action, participants } }))).data;
    expect(await act("add", [b, a, invite])).to.deep.equal([
      { phone: b, outcome: "added" },
      { phone: a, outcome: "already_member" },
      { phone: invite, outcome: "invited" },
    ]);
    expect(callsOf("groupParticipantsUpdate").at(-1)!.args).to.deep.equal([group, [b, a, invite].map(jidOf), "add"]);
    expect(await act("promote", [b, outsider])).to.deep.equal([
      { phone: b, outcome: "promoted" },
      { phone: outsider, outcome: "not_member" },
    ]);
    expect(await act("demote", [b])).to.deep.equal([{ phone: b, outcome: "demoted" }]);
    expect(await act("remove", [a])).to.deep.equal([{ phone: a, outcome: "removed" }]);
    const got = await expectOk(client.groups.get({ params: { connection: slug, group } }));
    expect(got.participants).to.have.deep.members([
      { phone: linked, lid: null, role: "admin" },
      { phone: b, lid: null, role: "member" },
    ]);

    // Not an admin: the network answers `not-authorized`, the API 403 not_group_admin.
    const plainMember = networkGroup(null, [a]);
    const refused = await http("POST", path(plainMember, "/participants"), { headers: auth, body: { action: "remove", participants: [a] } });
    expect(refused.status).to.equal(403);
    expect(refused.json.code).to.equal("not_group_admin");
    expect(standIn.world.groups.get(plainMember)!.participants.has(jidOf(a))).to.equal(true);
  });

  it("changes subject, description and settings through the library's calls; settings need an admin", async () => {
    const group = networkGroup("superadmin");
    const changed = await expectOk(client.groups.update({ params: { connection: slug, group }, body: { subject: "Renamed", description: "About us", announce: true, locked: true } }));
    expect(changed).to.include({ subject: "Renamed", description: "About us", announce: true, locked: true });
    expect(callsOf("groupUpdateSubject").at(-1)!.args).to.deep.equal([group, "Renamed"]);
    expect(callsOf("groupUpdateDescription").at(-1)!.args).to.deep.equal([group, "About us"]);
    expect(callsOf("groupSettingUpdate").slice(-2).map((c) => c.args)).to.deep.equal([
      [group, "announcement"],
      [group, "locked"],
    ]);
    const cleared = await expectOk(client.groups.update({ params: { connection: slug, group }, body: { description: "", announce: false, locked: false } }));
    expect(cleared).to.include({ description: null, announce: false, locked: false });
    // An empty description is the library's delete (an undefined one).
    expect(callsOf("groupUpdateDescription").at(-1)!.args).to.deep.equal([group, undefined]);

    // A member may rename an open group, but not change its settings: refused, nothing changed.
    const memberOnly = networkGroup(null);
    const before = standIn.world.groups.get(memberOnly)!.subject;
    const res = await http("PATCH", path(memberOnly), { headers: auth, body: { subject: "Members may", description: "but not", locked: true } });
    expect(res.status).to.equal(403);
    expect(res.json.code).to.equal("not_group_admin");
    expect(standIn.world.groups.get(memberOnly)).to.include({ subject: before, desc: undefined, restrict: false });
    expect((await expectOk(client.groups.update({ params: { connection: slug, group: memberOnly }, body: { subject: "Members may" } }))).subject).to.equal("Members may");
  });

  it("reads and renews the invite link, and leaves a group, after which it is unknown", async () => {
    const group = networkGroup("admin");
    const first = await expectOk(client.groups.invite({ params: { connection: slug, group } }));
    expect(first).to.deep.equal({ group, code: "FIRSTCODE0000000000000", link: "https://chat.whatsapp.com/FIRSTCODE0000000000000" });
    const renewed = await expectOk(client.groups.revokeInvite({ params: { connection: slug, group } }));
    expect(renewed.code).to.not.equal(first.code);
    expect(renewed.code).to.equal(standIn.world.groups.get(group)!.inviteCode);
    expect(callsOf("groupRevokeInvite").at(-1)!.args).to.deep.equal([group]);

    const memberOnly = networkGroup(null);
    const refused = await http("GET", path(memberOnly, "/invite"), { headers: auth });
    expect(refused.status).to.equal(403);
    expect(refused.json.code).to.equal("not_group_admin");

    expect((await http("POST", path(group, "/leave"), { headers: auth })).status).to.equal(204);
    expect(callsOf("groupLeave").at(-1)!.args).to.deep.equal([group]);
    expect(standIn.world.groups.get(group)!.participants.has(jidOf(linked))).to.equal(false);
    const gone = await http("GET", path(group), { headers: auth });
    expect(gone.status).to.equal(404);
    expect((await http("POST", path(group, "/leave"), { headers: auth })).status).to.equal(404);
  });

  it("takes up a group made with the number in it (groups.upsert), and drops one it was removed from", async () => {
    const group = newGroupJid();
    const [other, otherLid] = [uniquePhone(), `${uniqueLid()}@lid`];
    const eventsOf = async (type: string) =>
      ((await testEnv().gateway.ctx.db.query(`SELECT payload FROM events WHERE connection_id = $1 AND type = $2`, [connectionId, type])) as { payload: { data: Record<string, unknown> } }[])
        .map((r) => r.payload.data)
        .filter((d) => d.id === group || (d.group as { id?: string } | undefined)?.id === group);
    // The library's metadata of a LID-addressed group, as its `create` notification carries it.
    socket.emit("groups.upsert", [
      {
        id: group,
        addressingMode: "lid",
        subject: "Made by a friend",
        creation: Math.floor(Date.now() / 1000),
        owner: otherLid,
        ownerPn: jidOf(other),
        size: 2,
        restrict: false,
        announce: false,
        participants: [
          { id: otherLid, phoneNumber: jidOf(other), admin: "superadmin" },
          { id: ownLid, phoneNumber: jidOf(linked), admin: null },
        ],
        author: otherLid,
      },
    ]);
    const [joined] = await waitFor(() => eventsOf("group.joined"), (e) => e.length === 1);
    expect(joined).to.include({ subject: "Made by a friend", own_role: "member" });
    const queries = callsOf("groupMetadata").length;
    const got = await expectOk(client.groups.get({ params: { connection: slug, group } }));
    expect(got.participants).to.have.deep.members([
      { phone: other, lid: otherLid, role: "superadmin" },
      { phone: linked, lid: ownLid, role: "member" },
    ]);
    expect(callsOf("groupMetadata"), "read from the cache").to.have.length(queries);

    // Removed by its creator: the network names the number by LID alone and no longer answers for the group.
    socket.emit("group-participants.update", { id: group, author: otherLid, participants: [{ id: ownLid, admin: null }], action: "remove" });
    const [left] = await waitFor(() => eventsOf("group.participants"), (e) => e.length === 1);
    expect(left!.changes).to.deep.equal([{ phone: linked, lid: ownLid, change: "left" }]);
    const cached = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM group_metadata WHERE connection_id = $1 AND group_id = $2`, [connectionId, group]);
    expect(cached).to.have.length(0);
  });

  it("answers 503 with Retry-After while the socket is not on this process, and reaches it once it is", async () => {
    const group = networkGroup("admin");
    // The session closes here (as when another process holds the lease); the connection still reads connected.
    await baileysEngine().stop({ id: connectionId, callbackUrl: "" });
    const calls = socket.calls.length;
    const res = await http("GET", path(group), { headers: auth });
    expect(res.status).to.equal(503);
    expect(res.headers.get("retry-after")).to.match(/^\d+$/);
    expect(socket.calls.length, "calls on the closed socket").to.equal(calls);

    await baileysEngine().start({ id: connectionId, callbackUrl: "" });
    socket = await liveSocket(connectionId, (s) => s !== socket && s.user !== undefined);
    const got = await waitFor(() => http("GET", path(group), { headers: auth }), (r) => r.status === 200);
    expect(got.json.id).to.equal(group);
  });
});
