// The live event monitor's feed (GET /v1/events/stream): the session's workspace's events as they
// are recorded, over real HTTP from the outbox in PostgreSQL; never another workspace's, never
// to a key or to no one.
import { expect } from "chai";
import { recordEvent } from "../server/events/record.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";

const PATH = "/v1/events/stream";

/** Opens the stream with `cookie` and collects the `data:` payloads of its events. */
async function openStream(cookie: string) {
  const controller = new AbortController();
  const res = await fetch(testEnv().baseUrl + PATH, { headers: { cookie, accept: "text/event-stream" }, signal: controller.signal });
  const events: { id: string; type: string; data: Record<string, unknown> }[] = [];
  let buffer = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = /^data: (.*)$/m.exec(block);
          if (data) events.push(JSON.parse(data[1]!) as (typeof events)[number]);
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    res,
    events,
    async waitFor(id: string, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      while (!events.some((e) => e.id === id)) {
        if (Date.now() > until) throw new Error(`event ${id} did not arrive`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      controller.abort();
      await reading;
    },
  };
}

function record(workspaceId: string, note: string): Promise<string> {
  return testEnv().gateway.ctx.db.transaction((em) =>
    recordEvent(em, { workspaceId, type: "connection.connected", connection: null, data: { note } }),
  );
}

describe("event stream", () => {
  it("refuses no credential, an API key, and an unknown session cookie", async () => {
    const none = await http("GET", PATH);
    expect(none.status).to.equal(401);
    expect(none.headers.get("content-type")).to.match(/problem\+json/);
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read", "webhooks:read"]);
    const withKey = await http("GET", PATH, { headers: { authorization: `Bearer ${key}` } });
    expect(withKey.status).to.equal(401);
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
});
