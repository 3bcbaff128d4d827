// The live event feed (GET /v1/events/stream): the workspace's events as they are recorded, over
// real HTTP from the outbox in PostgreSQL; never another workspace's, never to a key without
// webhooks:read or to no one (keys with it: test/events-replay.test.ts). One poller per process
// serves every open stream (EventFeed).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import express from "express";
import { createDataSource } from "../server/db/data-source.js";
import { recordEvent } from "../server/events/record.js";
import { EventFeed, eventStream } from "../server/events/stream.js";
import { testEnv } from "./setup.js";
import { fromDashboard, http, newWorkspace } from "./support/actors.js";
import { openEventStream } from "./support/sse.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { sleep, waitFor } from "./support/wait.js";

const PATH = "/v1/events/stream";

/** Opens the stream with `cookie` and collects the `data:` payloads of its events. */
async function openStream(cookie: string, baseUrl = testEnv().baseUrl) {
  const events: { id: string; type: string; data: Record<string, unknown> }[] = [];
  const stream = await openEventStream<(typeof events)[number]>(baseUrl + PATH, { cookie, accept: "text/event-stream" }, (e) => events.push(e));
  return {
    res: stream.res,
    events,
    /** Whether the server ended the stream (or close() did). */
    get ended() {
      return stream.ended;
    },
    ids: () => events.map((e) => e.id),
    async waitFor(id: string, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      while (!events.some((e) => e.id === id)) {
        if (Date.now() > until) throw new Error(`event ${id} did not arrive`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => stream.close(),
  };
}

function record(workspaceId: string, note: string): Promise<string> {
  return testEnv().gateway.ctx.db.transaction((em) =>
    recordEvent(em, { workspaceId, type: "connection.connected", connection: null, data: { note } }),
  );
}

describe("event stream", () => {
  it("refuses no credential, an API key without webhooks:read, and an unknown session cookie", async () => {
    const none = await http("GET", PATH);
    expect(none.status).to.equal(401);
    expect(none.headers.get("content-type")).to.match(/problem\+json/);
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read", "webhooks:write"]);
    const withKey = await http("GET", PATH, { headers: { authorization: `Bearer ${key}` } });
    expect(withKey.status).to.equal(403);
    expect(withKey.json.code).to.equal("insufficient_scope");
    const revoked = await http("GET", PATH, { headers: { authorization: "Bearer svc_live_unknown" } });
    expect(revoked.status).to.equal(401);
    const forged = await http("GET", PATH, { headers: { cookie: "svc_session=not-a-session" } });
    expect(forged.status).to.equal(401);
  });

  it("sends the workspace's events as they are recorded, and never another workspace's", async () => {
    const a = await newWorkspace();
    const b = await newWorkspace();
    const before = await record(a.id, "before");
    const streamA = await openStream(a.owner.cookie);
    const streamB = await openStream(b.owner.cookie);
    try {
      expect(streamA.res.status).to.equal(200);
      expect(streamA.res.headers.get("content-type")).to.match(/^text\/event-stream/);
      const forB = await record(b.id, "b's");
      const forA = await record(a.id, "a's");
      await streamA.waitFor(forA);
      await streamB.waitFor(forB);
      // What came before the stream opened is the log's business, not the monitor's.
      expect(streamA.events.map((e) => e.id)).to.deep.equal([forA]);
      expect(streamA.events[0]!.data).to.deep.equal({ note: "a's" });
      expect(streamB.events.map((e) => e.id)).to.deep.equal([forB]);
      expect(before).to.not.equal(forA);
    } finally {
      await streamA.close();
      await streamB.close();
    }
  });

  it("gives many streams in two workspaces exactly their own events, once and in order, from one poller", async () => {
    const feed = testEnv().gateway.ctx.eventFeed;
    const open = feed.streams; // other files' pages may hold streams on the shared gateway
    const a = await newWorkspace();
    const b = await newWorkspace();
    const streamsA = await Promise.all(Array.from({ length: 6 }, () => openStream(a.owner.cookie)));
    const streamsB = await Promise.all(Array.from({ length: 6 }, () => openStream(b.owner.cookie)));
    try {
      await waitFor(async () => feed.streams, (n) => n === open + 12);
      expect(feed.running).to.equal(true);
      const forA: string[] = [];
      const forB: string[] = [];
      // Interleaved, each committed before the next is taken: ids, and commits, in order.
      for (let i = 0; i < 15; i++) {
        forA.push(await record(a.id, `a${i}`));
        forB.push(await record(b.id, `b${i}`));
      }
      await Promise.all([...streamsA.map((s) => s.waitFor(forA.at(-1)!)), ...streamsB.map((s) => s.waitFor(forB.at(-1)!))]);
      // A later event in each: whatever a stream would send twice or late is sent by then.
      const lastA = await record(a.id, "last");
      const lastB = await record(b.id, "last");
      await Promise.all([...streamsA.map((s) => s.waitFor(lastA)), ...streamsB.map((s) => s.waitFor(lastB))]);
      for (const s of streamsA) expect(s.ids()).to.deep.equal([...forA, lastA]);
      for (const s of streamsB) expect(s.ids()).to.deep.equal([...forB, lastB]);
      expect(streamsA[0]!.events[3]!.data).to.deep.equal({ note: "a3" });
    } finally {
      await Promise.all([...streamsA, ...streamsB].map((s) => s.close()));
    }
  });

  describe("on a route of its own, on a database connection this file can cut", () => {
    let proxy: TcpProxy;
    let db: ReturnType<typeof createDataSource>;
    let feed: EventFeed;
    let server: Server;
    let baseUrl: string;

    before(async () => {
      // A gateway's stream route of its own, on the run's database through a proxy this test cuts.
      proxy = await TcpProxy.inFrontOf(testEnv().databaseUrl);
      db = createDataSource({ url: proxy.urlFor(testEnv().databaseUrl), embedded: !process.env.DATABASE_URL });
      await db.initialize();
      feed = new EventFeed(db, 100);
      const app = express();
      app.get(PATH, eventStream(db, feed, { sessionCheckMs: 200 }));
      server = app.listen(0, "127.0.0.1");
      await new Promise((resolve) => server.once("listening", resolve));
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await proxy.restore();
      await db.destroy();
    });

    it("drops a closed stream's subscription, and stops polling when the last stream closes", async () => {
      expect(feed.running).to.equal(false);
      const ws = await newWorkspace();
      const first = await openStream(ws.owner.cookie, baseUrl);
      const second = await openStream(ws.owner.cookie, baseUrl);
      try {
        await waitFor(async () => feed.streams, (n) => n === 2);
        expect(feed.running).to.equal(true);
        await first.close();
        await waitFor(async () => feed.streams, (n) => n === 1);
        expect(feed.running).to.equal(true);
        const after = await record(ws.id, "after the first closed");
        await second.waitFor(after);
        expect(first.ids()).to.deep.equal([]);
        await second.close();
        await waitFor(async () => feed.streams, (n) => n === 0);
        expect(feed.running).to.equal(false);
        // A stream opened afterwards starts a poller again, from its own opening.
        const third = await openStream(ws.owner.cookie, baseUrl);
        try {
          const later = await record(ws.id, "later");
          await third.waitFor(later);
          expect(third.ids()).to.deep.equal([later]);
        } finally {
          await third.close();
        }
        await waitFor(async () => feed.running, (running) => !running);
      } finally {
        await first.close();
        await second.close();
      }
    });

    it("sends a burst larger than one read (200 rows) whole, once, in id order", async () => {
      const ws = await newWorkspace();
      const stream = await openStream(ws.owner.cookie, baseUrl);
      try {
        await waitFor(async () => feed.streams, (n) => n === 1);
        // One transaction: 450 events commit at once, so a poll finds them all new together.
        const burst = await testEnv().gateway.ctx.db.transaction(async (em) => {
          const ids: string[] = [];
          for (let i = 0; i < 450; i++) ids.push(await recordEvent(em, { workspaceId: ws.id, type: "connection.connected", connection: null, data: { i } }));
          return ids;
        });
        const last = await record(ws.id, "after the burst");
        await stream.waitFor(last, 15_000);
        expect(stream.ids()).to.deep.equal([...[...burst].sort(), last]);
      } finally {
        await stream.close();
      }
    });

    it("loses nothing recorded while the polls failed, and sends it once when the database is back", async () => {
      const ws = await newWorkspace();
      const stream = await openStream(ws.owner.cookie, baseUrl);
      try {
        const before = await record(ws.id, "before the cut");
        await stream.waitFor(before);
        await proxy.cut();
        const during: string[] = [];
        for (let i = 0; i < 5; i++) during.push(await record(ws.id, `during ${i}`));
        // Several ticks with the database away: nothing can have been read.
        await sleep(800);
        expect(stream.ids()).to.deep.equal([before]);
        await proxy.restore();
        await stream.waitFor(during.at(-1)!, 15_000);
        const afterwards = await record(ws.id, "afterwards");
        await stream.waitFor(afterwards);
        expect(stream.ids()).to.deep.equal([before, ...during, afterwards]);
      } finally {
        await stream.close();
      }
      await waitFor(async () => feed.running, (running) => !running);
    });

    it("ends the stream, and its subscription, when the session ends", async () => {
      const ws = await newWorkspace();
      const stream = await openStream(ws.owner.cookie, baseUrl);
      try {
        await waitFor(async () => feed.streams, (n) => n === 1);
        const logout = await http("POST", "/v1/auth/logout", { headers: fromDashboard(ws.owner.cookie) });
        expect(logout.status).to.be.below(300);
        await waitFor(async () => stream.ended, (ended) => ended);
        expect(feed.streams).to.equal(0);
        expect(feed.running).to.equal(false);
      } finally {
        await stream.close();
      }
    });
  });
});
