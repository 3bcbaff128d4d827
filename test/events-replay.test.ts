// GET /v1/events over real HTTP from the run's PostgreSQL: the workspace's events in the log's
// order from a cursor or an event id, pages that continue exactly after their last event, the
// filters and their limits, tenancy from the credential, the SDK's page iterator; and the SSE
// stream for a key with webhooks:read, resumed after Last-Event-ID.
import { expect } from "chai";
import { eventPages, expectOk, listAllEvents } from "../sdk/src/index.js";
import { pruneEvents } from "../jobs/prune.js";
import { ConfigError, loadConfig } from "../server/config.js";
import { rows } from "../server/db/rows.js";
import { recordEvent } from "../server/events/record.js";
import type { WebhookEvent } from "../contract/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";
import { openEventStream } from "./support/sse.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;

function record(workspaceId: string, i: number, type: WebhookEvent = "message.sent", slug: string | null = "sales"): Promise<string> {
  return db().transaction((em) => recordEvent(em, { workspaceId, type, connection: slug ? { id: `conn_${slug}`, slug } : null, data: { i } }));
}

async function logOrder(workspaceId: string): Promise<string[]> {
  return (await rows<{ id: string }>(db(), `SELECT id FROM events WHERE workspace_id = $1 ORDER BY tx, id`, [workspaceId])).map((r) => r.id);
}

/**
 * Waits until the log shows the workspace's `count` events: a write transaction running anywhere
 * on the server (another test run's, on a shared one) holds back what the log shows until it ends.
 */
async function settled(workspaceId: string, count: number): Promise<void> {
  const horizon = `pg_snapshot_xmin(pg_current_snapshot())::text::bigint`;
  await waitFor(() => rows<{ n: number }>(db(), `SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND tx < ${horizon}`, [workspaceId]), ([r]) => r!.n >= count);
}

type Page = { data: { id: string; type: string; connection: string | null; data: Record<string, unknown> }[]; next_cursor: string | null };

describe("event replay (GET /v1/events) and the stream for keys", function () {
  this.timeout(60_000);

  it("takes a key with webhooks:read or the session; refuses none, another scope, and a malformed credential", async () => {
    const ws = await newWorkspace();
    const readKey = await ws.key(["webhooks:read"]);
    const otherKey = await ws.key(["messages:read"]);
    expect((await http("GET", "/v1/events")).status).to.equal(401);
    expect((await http("GET", "/v1/events", { headers: { authorization: "Bearer svc_live_nope" } })).status).to.equal(401);
    const wrongScope = await http("GET", "/v1/events", { headers: { authorization: `Bearer ${otherKey.key}` } });
    expect(wrongScope.status).to.equal(403);
    expect(wrongScope.json.code).to.equal("insufficient_scope");
    expect((await http("GET", "/v1/events", { headers: { authorization: `Bearer ${readKey.key}` } })).status).to.equal(200);
    expect((await http("GET", "/v1/events", { headers: { cookie: ws.owner.cookie } })).status).to.equal(200);
  });

  it("pages through the workspace's events in the log's order, each page continuing exactly after the last", async () => {
    const ws = await newWorkspace();
    const other = await newWorkspace();
    const { key } = await ws.key(["webhooks:read"]);
    for (let i = 0; i < 12; i++) {
      await record(ws.id, i);
      if (i % 4 === 0) await record(other.id, i);
    }
    await settled(ws.id, 12);
    const order = await logOrder(ws.id);
    const pages: Page[] = [];
    let after: string | undefined;
    do {
      const res = await http("GET", `/v1/events?limit=5${after ? `&after=${after}` : ""}`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).to.equal(200);
      pages.push(res.json as unknown as Page);
      after = pages.at(-1)!.next_cursor ?? undefined;
    } while (after);
    expect(pages.map((p) => p.data.length)).to.deep.equal([5, 5, 2]);
    // Events of this workspace only: the other's were recorded in between.
    const ids = pages.flatMap((p) => p.data.map((e) => e.id));
    expect(ids).to.deep.equal(order.slice(-12));
    const [stored] = await rows<{ payload: unknown }>(db(), `SELECT payload FROM events WHERE id = $1`, [ids[0]]);
    expect(pages[0]!.data[0]).to.deep.equal(stored!.payload);
    // A page whose last event is the last one: the next page from its id is empty.
    const fromLast = await http("GET", `/v1/events?after=${ids.at(-1)}`, { headers: { authorization: `Bearer ${key}` } });
    expect(fromLast.json).to.deep.equal({ data: [], next_cursor: null });
  });

  it("replays from an event id exactly the events after it", async () => {
    const ws = await newWorkspace();
    const { client } = await ws.key(["webhooks:read"]);
    const first = [await record(ws.id, 0), await record(ws.id, 1), await record(ws.id, 2)];
    const later = [await record(ws.id, 3), await record(ws.id, 4)];
    await settled(ws.id, 5);
    const page = await expectOk(client.events.list({ query: { after: first[1]! } }));
    expect(page.data.map((e) => e.id)).to.deep.equal([first[2], ...later]);
    expect(page.next_cursor).to.equal(null);
  });

  it("holds a page back before an event whose transaction commits late, and starts the next page with it", async function () {
    // The embedded database is one backend session: a transaction held open there holds every
    // other statement, so no event can commit out of order on it.
    if (testEnv().gateway.database.embedded) this.skip();
    const ws = await newWorkspace();
    const { client } = await ws.key(["webhooks:read"]);
    const later = [await record(ws.id, 3), await record(ws.id, 4)];
    await settled(ws.id, 2);

    // A transaction that recorded its event before the ones after it and commits last: the page
    // read while it runs stops before it, and the next page starts with it.
    const runner = db().createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    const late = await recordEvent(runner.manager, { workspaceId: ws.id, type: "message.queued", connection: null, data: {} });
    const after = await record(ws.id, 5);
    const during = await expectOk(client.events.list({ query: { after: later.at(-1)! } }));
    expect(during.data.map((e) => e.id)).to.deep.equal([]);
    await runner.commitTransaction();
    await runner.release();
    await settled(ws.id, 4);
    const afterwards = await expectOk(client.events.list({ query: { after: later.at(-1)! } }));
    expect(afterwards.data.map((e) => e.id)).to.deep.equal([late, after]);
  });

  it("filters by type and connection; a cursor only continues the listing it came from", async () => {
    const ws = await newWorkspace();
    const { key, client } = await ws.key(["webhooks:read"]);
    const delivered: string[] = [];
    for (let i = 0; i < 6; i++) {
      await record(ws.id, i, "message.sent", i % 2 ? "sales" : "support");
      delivered.push(await record(ws.id, i, "message.delivered", i % 2 ? "sales" : "support"));
    }
    await record(ws.id, 99, "schedule.completed", null);
    await settled(ws.id, 13);
    const byType = await expectOk(client.events.list({ query: { type: "message.delivered", limit: 2 } }));
    expect(byType.data.map((e) => e.id)).to.deep.equal(delivered.slice(0, 2));
    const rest = await expectOk(client.events.list({ query: { type: "message.delivered", after: byType.next_cursor! } }));
    expect(rest.data.map((e) => e.id)).to.deep.equal(delivered.slice(2));
    const support = await expectOk(client.events.list({ query: { connection: "support", type: "message.delivered" } }));
    expect(support.data.map((e) => e.id)).to.deep.equal(delivered.filter((_, i) => i % 2 === 0));
    expect(support.data.every((e) => e.connection === "support")).to.equal(true);

    const auth = { authorization: `Bearer ${key}` };
    const otherFilters = await http("GET", `/v1/events?type=message.sent&after=${byType.next_cursor}`, { headers: auth });
    expect(otherFilters.status).to.equal(400);
    expect(otherFilters.json.errors).to.deep.equal([{ path: "query.after", message: "invalid cursor: it was issued for other filters; pass the same filters as for the first page" }]);
    const tampered = byType.next_cursor!.slice(0, -2) + (byType.next_cursor!.endsWith("AA") ? "BA" : "AA");
    expect((await http("GET", `/v1/events?type=message.delivered&after=${tampered}`, { headers: auth })).status).to.equal(400);
    // Another workspace's event is no position in this one.
    const stranger = await newWorkspace();
    const theirs = await record(stranger.id, 0);
    await settled(stranger.id, 1);
    const foreign = await http("GET", `/v1/events?after=${theirs}`, { headers: auth });
    expect(foreign.status).to.equal(400);
    expect(foreign.json.errors).to.deep.equal([{ path: "query.after", message: "no event with this id in the workspace: it may be older than the events kept" }]);
    // limit 1-1000; after 1-200 characters; nothing else.
    for (const q of ["limit=1", "limit=1000"]) expect((await http("GET", `/v1/events?${q}`, { headers: auth })).status, q).to.equal(200);
    for (const q of ["limit=0", "limit=1001", `after=${"A".repeat(201)}`, "after=", "since=x"]) {
      const res = await http("GET", `/v1/events?${q}`, { headers: auth });
      expect(res.status, q).to.equal(400);
      expect(res.json.code, q).to.equal("validation_failed");
    }
  });

  it("the SDK iterates over pages, and over every event after a given one", async () => {
    const ws = await newWorkspace();
    const { client } = await ws.key(["webhooks:read"]);
    for (let i = 0; i < 7; i++) await record(ws.id, i);
    await settled(ws.id, 7);
    const order = await logOrder(ws.id);
    const pages: string[][] = [];
    for await (const page of eventPages(client, { limit: 3 })) pages.push(page.data.map((e) => e.id));
    expect(pages).to.deep.equal([order.slice(0, 3), order.slice(3, 6), order.slice(6)]);
    const after: string[] = [];
    for await (const e of listAllEvents(client, { after: order[4]!, limit: 1 })) after.push(e.id);
    expect(after).to.deep.equal(order.slice(5));
  });

  it("streams to a key with webhooks:read, resuming after Last-Event-ID with each event once and in order", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key(["webhooks:read"]);
    const other = await ws.key(["messages:read"]);
    const url = testEnv().baseUrl + "/v1/events/stream";
    const refused = await http("GET", "/v1/events/stream", { headers: { authorization: `Bearer ${other.key}` } });
    expect(refused.status).to.equal(403);
    expect(refused.json.code).to.equal("insufficient_scope");

    const before = [await record(ws.id, 0), await record(ws.id, 1), await record(ws.id, 2)];
    const got: { id: string }[] = [];
    const stream = await openEventStream<{ id: string }>(url, { authorization: `Bearer ${key}`, "last-event-id": before[0]! }, (e) => got.push(e));
    try {
      expect(stream.res.status).to.equal(200);
      const live = await record(ws.id, 3);
      const deadline = Date.now() + 10_000;
      while (!got.some((e) => e.id === live) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const last = await record(ws.id, 4);
      while (!got.some((e) => e.id === last) && Date.now() < deadline + 5_000) await new Promise((r) => setTimeout(r, 50));
      expect(got.map((e) => e.id)).to.deep.equal([before[1], before[2], live, last]);
    } finally {
      await stream.close();
    }
  });

  it("keeps events EVENTS_RETENTION_DAYS (30 by default, at least 3): the prune job removes older ones only", async () => {
    const ws = await newWorkspace();
    const { client } = await ws.key(["webhooks:read"]);
    const [kept, gone, recent] = [await record(ws.id, 0), await record(ws.id, 1), await record(ws.id, 2)];
    await db().query(`UPDATE events SET created_at = now() - interval '30 days' + interval '1 minute' WHERE id = $1`, [kept]);
    await db().query(`UPDATE events SET created_at = now() - interval '30 days' - interval '1 minute' WHERE id = $1`, [gone]);
    await settled(ws.id, 3);
    expect(await pruneEvents(db(), testEnv().gateway.ctx.config.events.retentionDays)).to.be.at.least(1);
    const page = await expectOk(client.events.list({ query: {} }));
    expect(page.data.map((e) => e.id)).to.deep.equal([kept, recent]);
    expect(testEnv().gateway.ctx.config.events.retentionDays).to.equal(30);
    for (const days of ["3", "3650"]) expect(loadConfig({ EVENTS_RETENTION_DAYS: days, DATA_DIR: testEnv().dataDir }).events.retentionDays).to.equal(Number(days));
    for (const days of ["2", "3651"]) expect(() => loadConfig({ EVENTS_RETENTION_DAYS: days, DATA_DIR: testEnv().dataDir }), days).to.throw(ConfigError, /EVENTS_RETENTION_DAYS/);
  });
});
