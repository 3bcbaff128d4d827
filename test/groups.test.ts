// Groups over HTTP on the sandbox engine: listing, reading, creating with an outcome per
// participant, changing subject/description/settings, acting on participants, leaving, the invite
// link; the refusals (404 unknown group, 403 not_group_admin, 409 not connected) and the limits at
// their edges (subject 100/101, participants 256/257). The network side is played through the
// sandbox control API.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { http, newWorkspace, type Client, type TestWorkspace } from "./support/actors.js";
import { testEnv } from "./setup.js";
import { mcpClient } from "./support/mcp.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const SCOPES = ["connections:read", "connections:write"] as const;

/**
 * Until the sandbox has posted every report it owes the connection. A report still in flight when
 * the gateway changes the same group through the API can arrive after that change and briefly
 * restore the older state (docs/decisions.md, "Groups"): tests that act right after a change on
 * the network side wait for its report first.
 */
async function reported(connectionId: string): Promise<void> {
  await waitFor(
    async () => ((await testEnv().gateway.ctx.db.query(`SELECT count(*)::int AS n FROM sandbox_callbacks WHERE connection_id = $1`, [connectionId])) as { n: number }[])[0]!.n,
    (n) => n === 0,
  );
}

describe("groups (sandbox)", () => {
  let ws: TestWorkspace;
  let client: Client;
  let auth: Record<string, string>;
  let slug: string;
  let linked: string;
  let connectionId: string;
  const base = () => `/v1/connections/${slug}/groups`;
  const path = (group: string, tail = "") => `${base()}/${encodeURIComponent(group)}${tail}`;

  /** A group made on the network side with the linked number in it as `role`. */
  async function networkGroup(role: "member" | "admin" | "superadmin", extra: Record<string, unknown> = {}): Promise<string> {
    const res = await sandbox("POST", "/groups", { phone: linked, role, subject: `Team ${randomBytes(2).toString("hex")}`, ...extra });
    expect(res.status).to.equal(201);
    await reported(connectionId);
    return res.json.id as string;
  }

  before(async () => {
    ws = await newWorkspace("pro");
    const issued = await ws.key([...SCOPES]);
    client = issued.client;
    auth = { authorization: `Bearer ${issued.key}` };
    slug = `groups-${randomBytes(3).toString("hex")}`;
    linked = uniquePhone("+1556");
    connectionId = (await pairConnection(client, slug, linked)).id;
  });

  // The outcomes per participant and the members read back: the engine contract (test/engine-contract.test.ts).
  it("creates a group that reads back with its settings and is listed", async () => {
    const plain = uniquePhone();
    const created = await expectOk(client.groups.create({ params: { connection: slug }, body: { subject: "Night shift", participants: [plain] } }));
    expect(created).to.include({ object: "group", subject: "Night shift", own_role: "superadmin", size: 2, description: null, announce: false, locked: false });
    const listed = await expectOk(client.groups.list({ params: { connection: slug } }));
    expect(listed.data.find((g) => g.id === created.id)).to.deep.equal({
      id: created.id,
      object: "group",
      subject: "Night shift",
      size: 2,
      own_role: "superadmin",
      created_at: created.created_at,
    });
  });

  it("pages the list newest first with a cursor bound to the connection", async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push(await networkGroup("member"));
    // The network reports each new group; the list has them once the reports arrived.
    await waitFor(
      () => expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } })),
      (l) => made.every((id) => l.data.some((g) => g.id === id)),
    );
    const first = await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 2 } }));
    expect(first.data).to.have.length(2);
    expect(first.next_cursor).to.be.a("string");
    const second = await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100, cursor: first.next_cursor! } }));
    const ids = [...first.data, ...second.data].map((g) => g.id);
    expect(new Set(ids).size).to.equal(ids.length);
    const all = await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } }));
    expect(ids).to.deep.equal(all.data.map((g) => g.id));
    const times = all.data.map((g) => g.created_at);
    expect([...times].sort().reverse()).to.deep.equal(times);
    expect((await http("GET", `${base()}?cursor=${first.next_cursor!.slice(0, -2)}xx`, { headers: auth })).status).to.equal(400);
  });

  it("follows what the network side does: joins, leaves, promotions and subject changes", async () => {
    const group = await networkGroup("member");
    const [a, b] = [uniquePhone(), uniquePhone()];
    expect((await sandbox("POST", `/groups/${encodeURIComponent(group)}/members`, { action: "join", phones: [a, b] })).status).to.equal(200);
    await sandbox("POST", `/groups/${encodeURIComponent(group)}/members`, { action: "leave", phones: [b] });
    await sandbox("POST", `/groups/${encodeURIComponent(group)}/members`, { action: "promote", phones: [a, linked] });
    expect((await sandbox("PATCH", `/groups/${encodeURIComponent(group)}`, { subject: "Renamed", description: "About" })).status).to.equal(200);
    const got = await waitFor(
      () => expectOk(client.groups.get({ params: { connection: slug, group } })),
      (g) => g.subject === "Renamed" && g.size === 2 && g.own_role === "admin" && g.participants.some((p) => p.phone === a && p.role === "admin"),
    );
    expect(got).to.include({ subject: "Renamed", description: "About", own_role: "admin", size: 2 });
    expect(got.participants.map((p) => [p.phone, p.role])).to.have.deep.members([
      [linked, "admin"],
      [a, "admin"],
    ]);
    expect((await sandbox("POST", "/groups/120363000000000000@g.us/members", { action: "join", phones: [a] })).status).to.equal(404);
  });

  it("acts on participants with an outcome each, and refuses a member who is not an admin (403)", async () => {
    const group = await networkGroup("admin");
    const [a, b, stranger] = [uniquePhone(), uniquePhone(), uniquePhone()];
    const act = (action: "add" | "remove" | "promote" | "demote", participants: string[]) =>
      client.groups.participants({ params: { connection: slug, group }, body: { action, participants } });
    expect((await expectOk(act("add", [a, b]))).data).to.deep.equal([
      { phone: a, outcome: "added" },
      { phone: b, outcome: "added" },
    ]);
    expect((await expectOk(act("add", [a]))).data).to.deep.equal([{ phone: a, outcome: "already_member" }]);
    expect((await expectOk(act("promote", [a, stranger]))).data).to.deep.equal([
      { phone: a, outcome: "promoted" },
      { phone: stranger, outcome: "not_member" },
    ]);
    expect((await expectOk(act("demote", [a]))).data).to.deep.equal([{ phone: a, outcome: "demoted" }]);
    expect((await expectOk(act("remove", [b]))).data).to.deep.equal([{ phone: b, outcome: "removed" }]);

    const memberOnly = await networkGroup("member");
    const refused = await http("POST", path(memberOnly, "/participants"), { headers: auth, body: { action: "add", participants: [a] } });
    expect(refused.status).to.equal(403);
    expect(refused.json.code).to.equal("not_group_admin");
    const after = await expectOk(client.groups.get({ params: { connection: slug, group: memberOnly } }));
    expect(after.size).to.equal(1);
  });

  it("changes subject, description and settings; settings and a locked group need an admin", async () => {
    const group = await networkGroup("admin");
    const changed = await expectOk(client.groups.update({ params: { connection: slug, group }, body: { subject: "s".repeat(100), description: "d".repeat(2048), announce: true } }));
    expect(changed).to.include({ subject: "s".repeat(100), description: "d".repeat(2048), announce: true, locked: false });
    const cleared = await expectOk(client.groups.update({ params: { connection: slug, group }, body: { description: "" } }));
    expect(cleared.description).to.equal(null);

    const open = await networkGroup("member");
    expect((await expectOk(client.groups.update({ params: { connection: slug, group: open }, body: { subject: "Members may" } }))).subject).to.equal("Members may");
    const settings = await http("PATCH", path(open), { headers: auth, body: { locked: true } });
    expect(settings.status).to.equal(403);
    expect(settings.json.code).to.equal("not_group_admin");
    const locked = await networkGroup("member", { locked: true });
    const subject = await http("PATCH", path(locked), { headers: auth, body: { subject: "Not allowed" } });
    expect(subject.status).to.equal(403);
    expect((await expectOk(client.groups.get({ params: { connection: slug, group: locked } }))).subject).to.not.equal("Not allowed");
  });

  it("gives the invite link to an admin, renews it on POST, and refuses a plain member", async () => {
    const group = await networkGroup("admin");
    const first = await expectOk(client.groups.invite({ params: { connection: slug, group } }));
    expect(first.link).to.equal(`https://chat.whatsapp.com/${first.code}`);
    expect((await expectOk(client.groups.invite({ params: { connection: slug, group } }))).code).to.equal(first.code);
    const renewed = await expectOk(client.groups.revokeInvite({ params: { connection: slug, group } }));
    expect(renewed.code).to.not.equal(first.code);
    const member = await networkGroup("member");
    const refused = await http("GET", path(member, "/invite"), { headers: auth });
    expect(refused.status).to.equal(403);
    expect(refused.json.code).to.equal("not_group_admin");
  });

  it("leaves a group, which is then unknown (404)", async () => {
    const group = await networkGroup("member");
    expect((await http("POST", path(group, "/leave"), { headers: auth })).status).to.equal(204);
    for (const [method, tail] of [["GET", ""], ["POST", "/leave"], ["GET", "/invite"]] as const) {
      const res = await http(method, path(group, tail), { headers: auth });
      expect(res.status, `${method} ${tail}`).to.equal(404);
      expect(res.json.code).to.equal("not_found");
    }
    const listed = await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } }));
    expect(listed.data.map((g) => g.id)).to.not.include(group);
  });

  it("answers 404 for an unknown group and for a group of another number", async () => {
    expect((await http("GET", path("120363999999999999@g.us"), { headers: auth })).status).to.equal(404);
    const other = await sandbox("POST", "/groups", { phone: uniquePhone(), subject: "Elsewhere" });
    const res = await http("PATCH", path(other.json.id as string), { headers: auth, body: { subject: "Mine now" } });
    expect(res.status).to.equal(404);
  });

  it("tests subject 100/101 and participants 256/257, and refuses bad bodies without changing anything", async () => {
    const participants = (n: number) => Array.from({ length: n }, () => uniquePhone());
    const create = (body: unknown) => http("POST", base(), { headers: auth, body });
    const before = (await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } }))).data.length;
    for (const body of [
      { subject: "s".repeat(101), participants: participants(1) },
      { subject: "", participants: participants(1) },
      { subject: "ok", participants: [] },
      { subject: "ok", participants: participants(257) },
      { subject: "ok", participants: participants(1), extra: true },
    ]) {
      const res = await create(body);
      expect(res.status).to.equal(400);
      expect(res.json.code).to.equal("validation_failed");
    }
    const after = (await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } }))).data.length;
    expect(after).to.equal(before);
    const big = await create({ subject: "s".repeat(100), participants: participants(256) });
    expect(big.status).to.equal(201);
    expect(big.json.size).to.equal(257);

    const group = big.json.id as string;
    const act = (n: number) => http("POST", path(group, "/participants"), { headers: auth, body: { action: "add", participants: participants(n) } });
    expect((await act(257)).status).to.equal(400);
    expect((await act(256)).status).to.equal(200);
    const patch = (body: unknown) => http("PATCH", path(group), { headers: auth, body });
    expect((await patch({ subject: "s".repeat(101) })).status).to.equal(400);
    expect((await patch({ description: "d".repeat(2049) })).status).to.equal(400);
    expect((await patch({})).status).to.equal(400);
    expect((await patch({ action: "remove" })).status).to.equal(400);
    expect((await http("POST", path(group, "/participants"), { headers: auth, body: { action: "kick", participants: [linked] } })).status).to.equal(400);
  });

  it("answers 409 while the connection is not connected, and 404 for an unknown connection", async () => {
    const idle = `idle-${randomBytes(3).toString("hex")}`;
    await expectOk(client.connections.create({ body: { slug: idle } }));
    for (const [method, p, body] of [
      ["GET", `/v1/connections/${idle}/groups`, undefined],
      ["GET", `/v1/connections/${idle}/groups/120363000000000001@g.us`, undefined],
      ["POST", `/v1/connections/${idle}/groups`, { subject: "x", participants: [uniquePhone()] }],
    ] as const) {
      const res = await http(method, p, { headers: auth, body });
      expect(res.status, p).to.equal(409);
      expect(res.json.code).to.equal("connection_not_ready");
    }
    expect((await http("GET", "/v1/connections/nope-none/groups", { headers: auth })).status).to.equal(404);
  });

  it("needs connections:read to read and connections:write to change; another workspace sees no group", async () => {
    const reader = await ws.key(["connections:read"]);
    const headers = { authorization: `Bearer ${reader.key}` };
    const group = await networkGroup("admin");
    expect((await http("GET", path(group), { headers })).status).to.equal(200);
    const refused = await http("POST", path(group, "/participants"), { headers, body: { action: "add", participants: [uniquePhone()] } });
    expect(refused.status).to.equal(403);
    expect(refused.json.code).to.equal("insufficient_scope");
    const stranger = await (await newWorkspace("pro")).key([...SCOPES]);
    expect((await http("GET", path(group), { headers: { authorization: `Bearer ${stranger.key}` } })).status).to.equal(404);
  });
});

describe("groups: cached metadata and events (sandbox)", () => {
  let ws: TestWorkspace;
  let client: Client;
  let slug: string;
  let linked: string;
  let connectionId: string;
  const calls: string[] = [];
  let restore: () => void;

  const eventsOf = async (type: string) =>
    (await testEnv().gateway.ctx.db.query(`SELECT payload FROM events WHERE connection_id = $1 AND type = $2 ORDER BY created_at, id`, [connectionId, type])).map(
      (r: { payload: { data: Record<string, unknown> } }) => r.payload.data,
    ) as Record<string, unknown>[];

  before(async () => {
    ws = await newWorkspace("pro");
    client = (await ws.key([...SCOPES])).client;
    slug = `cache-${randomBytes(3).toString("hex")}`;
    linked = uniquePhone("+1556");
    connectionId = (await pairConnection(client, slug, linked)).id;
    // Count the engine's group queries (the real sandbox engine answers them).
    const groups = testEnv().gateway.ctx.engines.get("sandbox")!.groups!;
    const original = { list: groups.list.bind(groups), get: groups.get.bind(groups) };
    groups.list = (c) => (c.id === connectionId && calls.push("list"), original.list(c));
    groups.get = (c, g) => (c.id === connectionId && calls.push("get"), original.get(c, g));
    restore = () => Object.assign(groups, original);
  });

  after(() => restore());

  it("asks the network for the list once; the network's group events keep it fresh, with group.joined, group.updated and group.participants", async () => {
    const first = await sandbox("POST", "/groups", { phone: linked, subject: "Before" });
    const group = first.json.id as string;
    await expectOk(client.groups.list({ params: { connection: slug } }));
    await expectOk(client.groups.list({ params: { connection: slug } }));
    expect(calls.filter((c) => c === "list")).to.have.length(1);

    const newcomer = uniquePhone();
    await sandbox("POST", `/groups/${encodeURIComponent(group)}/members`, { action: "join", phones: [newcomer] });
    await sandbox("PATCH", `/groups/${encodeURIComponent(group)}`, { subject: "After" });
    const second = await sandbox("POST", "/groups", { phone: linked, subject: "New one" });
    const seen = await waitFor(
      () => expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } })),
      (l) => l.data.some((g) => g.id === second.json.id) && l.data.some((g) => g.id === group && g.subject === "After" && g.size === 2),
    );
    expect(seen.data.map((g) => g.id)).to.include.members([group, second.json.id]);
    const got = await expectOk(client.groups.get({ params: { connection: slug, group } }));
    expect(got.participants.map((p) => p.phone)).to.have.members([linked, newcomer]);
    expect(calls.filter((c) => c === "list")).to.have.length(1);
    expect(calls.filter((c) => c === "get"), "reads served from the cache").to.have.length(0);

    // The first group may have been reported before the first list (then it was joined as far as the gateway knows).
    const joined = (await eventsOf("group.joined")).map((d) => d.id);
    expect(joined).to.include(second.json.id);
    expect(joined.filter((id) => id !== group)).to.deep.equal([second.json.id]);
    const updated = await eventsOf("group.updated");
    expect(updated).to.have.length(1);
    expect(updated[0]).to.deep.include({ changed: ["subject"] });
    expect(updated[0]!.group).to.include({ id: group, subject: "After" });
    const participants = await eventsOf("group.participants");
    expect(participants.map((d) => d.changes)).to.deep.equal([[{ phone: newcomer, lid: null, change: "joined" }]]);
  });

  it("records the linked number leaving, removes the group from the list, and changes made through the API record their events once", async () => {
    const made = await expectOk(client.groups.create({ params: { connection: slug }, body: { subject: "Ours", participants: [uniquePhone()] } }));
    await reported(connectionId);
    await expectOk(client.groups.update({ params: { connection: slug, group: made.id }, body: { description: "Shift notes" } }));
    await reported(connectionId);
    expect((await http("POST", `/v1/connections/${slug}/groups/${encodeURIComponent(made.id)}/leave`, { headers: { authorization: `Bearer ${(await ws.key([...SCOPES])).key}` } })).status).to.equal(204);
    const listed = await expectOk(client.groups.list({ params: { connection: slug }, query: { limit: 100 } }));
    expect(listed.data.map((g) => g.id)).to.not.include(made.id);
    // The network echoes each change back; the cache already has it, so nothing is recorded twice.
    await reported(connectionId);
    expect((await eventsOf("group.joined")).filter((d) => d.id === made.id)).to.have.length(1);
    expect((await eventsOf("group.updated")).filter((d) => (d.group as { id: string }).id === made.id).map((d) => d.changed)).to.deep.equal([["description"]]);
    const left = (await eventsOf("group.participants")).filter((d) => (d.group as { id: string }).id === made.id);
    expect(left.map((d) => d.changes)).to.deep.equal([[{ phone: linked, lid: null, change: "left" }]]);
  });
});

describe("groups on the tool endpoint (MCP)", () => {
  it("lists a connection's groups and reads one with list_groups and get_group; an unknown group is an error", async () => {
    const ws = await newWorkspace("pro");
    const setup = await ws.key([...SCOPES]);
    const slug = `mcp-grp-${randomBytes(3).toString("hex")}`;
    const phone = uniquePhone("+1556");
    const connectionId = (await pairConnection(setup.client, slug, phone)).id;
    const made = await sandbox("POST", "/groups", { phone, role: "admin", subject: "Assistants", members: [{ phone: uniquePhone() }] });
    await reported(connectionId);
    const client = await mcpClient((await ws.key(["mcp:read"])).key, "2026-07-28");
    try {
      const list = await client.callTool({ name: "list_groups", arguments: { connection: slug } });
      expect(list.isError ?? false).to.equal(false);
      expect((list.structuredContent as { data: { id: string; subject: string; own_role: string }[] }).data).to.deep.include.members([
        { id: made.json.id, object: "group", subject: "Assistants", size: 2, own_role: "admin", created_at: new Date(made.json.createdAt as string).toISOString() },
      ]);
      const one = await client.callTool({ name: "get_group", arguments: { connection: slug, group: made.json.id } });
      expect(one.structuredContent).to.deep.include({ id: made.json.id, subject: "Assistants", size: 2, announce: false, locked: false });
      expect((one.structuredContent as { participants: unknown[] }).participants).to.have.length(2);
      const missing = await client.callTool({ name: "get_group", arguments: { connection: slug, group: "120363999999999998@g.us" } });
      expect(missing.isError).to.equal(true);
    } finally {
      await client.close();
    }
  });
});
