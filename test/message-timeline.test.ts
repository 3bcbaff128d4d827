// Timelines in time order: whatever order the hand-off's statements and the engine's reports land
// in, each entry of a message's timeline is no earlier than the one before it, and the steps come
// in the lifecycle's order (a late report aside), in the API and in the webhook events.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { MessageWithTimeline } from "../contract/index.js";
import { rank } from "../server/messages/status.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;

/** Messages per connection, and connections: enough that reports overtake hand-offs. */
const PER_CONNECTION = 20;
const CONNECTIONS = 3;

describe("message timelines", function () {
  this.timeout(120_000);

  it("keeps every entry no earlier than the one before it, in lifecycle order, for many messages at once", async () => {
    const ws = await newWorkspace();
    const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
    const auth = { authorization: `Bearer ${key.key}` };
    const slugs: string[] = [];
    for (let c = 0; c < CONNECTIONS; c++) {
      const slug = `tl-${randomBytes(3).toString("hex")}`;
      await pairConnection(key.client, slug, uniquePhone());
      slugs.push(slug);
    }
    const sends = slugs.flatMap((slug) =>
      Array.from({ length: PER_CONNECTION }, (_, i) => http("POST", "/v1/messages/text", { body: { connection: slug, to: uniquePhone(), body: `timeline ${i}` }, headers: auth })),
    );
    const ids = (await Promise.all(sends)).map((res) => {
      expect(res.status).to.equal(202);
      return res.json.id as string;
    });
    await waitFor(
      async () => (await db().query(`SELECT count(*)::int AS n FROM messages WHERE id = ANY($1) AND status = 'read'`, [ids])) as { n: number }[],
      (r) => r[0]!.n === ids.length,
      60_000,
      200,
    );

    const disorders: string[] = [];
    for (const id of ids) {
      const res = await http("GET", `/v1/messages/${id}`, { headers: auth });
      expect(res.status).to.equal(200);
      const timeline = (res.json as unknown as MessageWithTimeline).timeline;
      // `submitted` is left out when the engine's `sent` report landed first (the status moved past it).
      expect(timeline.map((t) => t.status)).to.include.members(["accepted", "submitting", "sent", "delivered", "read"]);
      for (let i = 1; i < timeline.length; i++) {
        const [before, entry] = [timeline[i - 1]!, timeline[i]!];
        if (Date.parse(entry.at) < Date.parse(before.at)) disorders.push(`${id}: ${entry.status} at ${entry.at} after ${before.status} at ${before.at}`);
        if (rank(entry.status) < rank(before.status) && !entry.detail?.startsWith("late")) disorders.push(`${id}: ${entry.status} listed after ${before.status}`);
      }
    }
    // The webhook events of each message (their payloads as webhooks deliver them), in the
    // outbox's order: statuses in lifecycle order, times never going back.
    const events = (await db().query(
      `SELECT payload FROM events WHERE payload->'data'->>'id' = ANY($1) AND type LIKE 'message.%' ORDER BY created_at, id`,
      [ids],
    )) as { payload: { type: string; created_at: string; data: { id: string; status: MessageWithTimeline["status"]; updated_at: string } } }[];
    expect(events.length).to.be.at.least(ids.length * 3);
    const last = new Map<string, (typeof events)[number]["payload"]>();
    for (const { payload } of events) {
      const before = last.get(payload.data.id);
      last.set(payload.data.id, payload);
      if (!before) continue;
      if (rank(payload.data.status) < rank(before.data.status)) disorders.push(`${payload.data.id}: ${payload.type} after ${before.type}`);
      if (Date.parse(payload.data.updated_at) < Date.parse(before.data.updated_at)) disorders.push(`${payload.data.id}: ${payload.type} updated before ${before.type}`);
    }
    expect(disorders).to.deep.equal([]);
  });
});
