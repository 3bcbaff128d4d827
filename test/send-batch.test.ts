// Sends that arrive together share one statement (server/messages/send-batch.ts). Each must still
// be decided on its own: its workspace, connection, key and allowance; a refused one writes
// nothing; and a send that makes the statement fail fails alone.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { SendBatcher, type SendInput } from "../server/messages/send-batch.js";
import { newId } from "../server/ids.js";
import { createDataSource } from "../server/db/data-source.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { TcpProxy } from "./support/tcp-proxy.js";

const db = () => testEnv().gateway.ctx.db;

async function connected(ws: TestWorkspace) {
  const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
  const slug = `b-${randomBytes(3).toString("hex")}`;
  const phone = uniquePhone();
  const { id } = await pairConnection(key.client, slug, phone);
  return { id, slug, phone, auth: { authorization: `Bearer ${key.key}` } };
}

/** A send as the batcher takes it, queued now, with a body naming its id. */
function sendInput(workspaceId: string, slug: string, recipient: string, idempotencyKey: string | null = null): SendInput {
  const now = new Date();
  const id = newId("msg", now.getTime());
  return {
    id, workspaceId, status: "queued", recipient, body: `isolated ${id}`, media: null, location: null, context: null,
    metadata: null, contextSensitivity: null, sendAt: null, timezone: null, createdAt: now,
    idempotencyKey, fingerprint: idempotencyKey ? randomBytes(32) : null, view: { id } as unknown as SendInput["view"],
    connectionSlug: slug, deferred: false, planRefuses: false, allowance: null, event: null,
  };
}

describe("sends sharing a statement", () => {
  it("decides each of many concurrent sends on its own: accepted, unknown connection, not connected", async () => {
    const [a, b] = [await newWorkspace(), await newWorkspace()];
    const [ca, cb] = [await connected(a), await connected(b)];
    const unpaired = `u-${randomBytes(3).toString("hex")}`;
    expect((await http("POST", "/v1/connections", { body: { slug: unpaired }, headers: ca.auth })).status).to.equal(201);

    const tag = randomBytes(4).toString("hex");
    const plan = [
      ...Array.from({ length: 8 }, (_, i) => ({ auth: ca.auth, slug: ca.slug, expect: 202, text: `${tag} a${i}` })),
      ...Array.from({ length: 8 }, (_, i) => ({ auth: cb.auth, slug: cb.slug, expect: 202, text: `${tag} b${i}` })),
      ...Array.from({ length: 4 }, (_, i) => ({ auth: ca.auth, slug: "nope", expect: 400, text: `${tag} x${i}` })),
      ...Array.from({ length: 4 }, (_, i) => ({ auth: ca.auth, slug: unpaired, expect: 409, text: `${tag} y${i}` })),
    ];
    const results = await Promise.all(
      plan.map((p, i) =>
        http("POST", "/v1/messages/text", { body: { connection: p.slug, to: uniquePhone(), body: p.text }, headers: { ...p.auth, "idempotency-key": `${tag}-${i}` } }),
      ),
    );
    expect(results.map((r) => r.status)).to.deep.equal(plan.map((p) => p.expect));
    for (const [i, r] of results.entries()) {
      if (r.status !== 202) continue;
      expect(r.json).to.include({ body: plan[i]!.text, from: plan[i]!.slug === ca.slug ? ca.phone : cb.phone, status: "queued" });
    }

    const written = (await db().query(
      `SELECT m.workspace_id, m.body, m.sender, array_agg(t.status ORDER BY t.id) AS timeline,
              (SELECT e.payload->'data'->>'from' FROM events e WHERE e.type = 'message.queued' AND e.payload->'data'->>'id' = m.id) AS event_from
         FROM messages m JOIN message_timeline t ON t.message_id = m.id
        WHERE m.body LIKE $1 GROUP BY m.id ORDER BY m.body`,
      [`${tag} %`],
    )) as { workspace_id: string; body: string; sender: string; timeline: string[]; event_from: string }[];
    expect(written.map((w) => w.body)).to.deep.equal(plan.filter((p) => p.expect === 202).map((p) => p.text).sort());
    for (const w of written) {
      const phone = w.workspace_id === a.id ? ca.phone : cb.phone;
      expect(w).to.deep.include({ sender: phone, event_from: phone });
      // Queued (its acceptance is the row's created_at); the dispatcher may have moved it on since.
      expect(w.timeline[0]).to.equal("queued");
    }
    const keys = (await db().query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key LIKE $1`, [`${tag}-%`])) as { n: number }[];
    expect(keys[0]!.n).to.equal(16);
    const usage = (await db().query(
      `SELECT workspace_id, sum(messages_outbound)::int AS n FROM usage_daily WHERE workspace_id = ANY($1) GROUP BY workspace_id`,
      [[a.id, b.id]],
    )) as { workspace_id: string; n: number }[];
    expect(Object.fromEntries(usage.map((u) => [u.workspace_id, u.n]))).to.deep.equal({ [a.id]: 8, [b.id]: 8 });
  });

  it("fails only the send that makes a shared statement fail", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const batcher = new SendBatcher(db());
    const input = (recipient: string) => sendInput(ws.id, c.slug, recipient);
    const good = [input(JSON.stringify("+15550100001")), input(JSON.stringify("+15550100002"))];
    // Not JSON: the recipient column refuses it, and with it the whole statement.
    const bad = input("not json");
    const outcomes = await Promise.allSettled([batcher.send(good[0]!), batcher.send(bad), batcher.send(good[1]!)]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(["fulfilled", "rejected", "fulfilled"]);
    for (const o of [outcomes[0], outcomes[2]]) expect((o as PromiseFulfilledResult<{ accepted: boolean }>).value.accepted).to.equal(true);
    const rows = (await db().query(`SELECT id FROM messages WHERE id = ANY($1) ORDER BY id`, [[...good, bad].map((i) => i.id)])) as { id: string }[];
    expect(rows.map((r) => r.id)).to.deep.equal(good.map((i) => i.id).sort());
  });

  it("answers the sends of a shared statement whose answer was lost from what it wrote, each once", async function () {
    // Cut through a TCP proxy, recognised by its prepared statement's name.
    const ws = await newWorkspace();
    const c = await connected(ws);
    const proxy = await TcpProxy.inFrontOf(testEnv().databaseUrl);
    const through = createDataSource({ url: proxy.urlFor(testEnv().databaseUrl), embedded: false });
    await through.initialize();
    try {
      const batcher = new SendBatcher(through);
      const sends = [
        sendInput(ws.id, c.slug, JSON.stringify(uniquePhone())),
        sendInput(ws.id, c.slug, JSON.stringify(uniquePhone()), randomBytes(8).toString("hex")),
        sendInput(ws.id, "nope", JSON.stringify(uniquePhone())),
        sendInput(ws.id, c.slug, JSON.stringify(uniquePhone())),
      ];
      const lost = proxy.loseAnswerTo("send-messages");
      // Sent in one turn: one statement (send-batch.ts), whose answer the proxy withholds.
      const outcomes = await Promise.all(sends.map((s) => batcher.send(s)));
      await lost;
      // Before: the sends were written again one by one, and each written one failed on its own id.
      expect(outcomes.map((o) => o.accepted)).to.deep.equal([true, true, false, true]);
      for (const o of [outcomes[0]!, outcomes[1]!, outcomes[3]!]) expect(o).to.include({ c_id: c.id, c_phone: c.phone });
      expect(outcomes[2]!.c_id).to.equal(null);
      const written = (await db().query(
        `SELECT m.id, (SELECT count(*)::int FROM message_timeline t WHERE t.message_id = m.id AND t.status = 'queued') AS timeline,
                (SELECT count(*)::int FROM idempotency_keys k WHERE k.workspace_id = m.workspace_id) AS keys
           FROM messages m WHERE m.workspace_id = $1 ORDER BY m.id`,
        [ws.id],
      )) as { id: string; timeline: number; keys: number }[];
      expect(written.map((w) => w.id)).to.deep.equal([sends[0]!.id, sends[1]!.id, sends[3]!.id].sort());
      // Written once: one first timeline entry each (the dispatcher adds later ones) and one key record.
      for (const w of written) expect(w.timeline).to.equal(1);
      expect(written[0]!.keys).to.equal(1);
      const usage = (await db().query(`SELECT sum(messages_outbound)::int AS n FROM usage_daily WHERE workspace_id = $1`, [ws.id])) as { n: number }[];
      expect(usage[0]!.n).to.equal(3);
    } finally {
      await through.destroy();
      await proxy.cut();
    }
  });

  it("refuses the NUL character anywhere in a request with 400 naming the field, and writes nothing", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const tag = randomBytes(4).toString("hex");
    const cases: [Record<string, unknown>, string][] = [
      [{ connection: c.slug, to: uniquePhone(), body: `${tag} a\u0000b` }, "body.body"],
      [{ connection: c.slug, to: uniquePhone(), body: tag, metadata: { k: "v\u0000" } }, "body.metadata.k"],
    ];
    for (const [body, path] of cases) {
      const res = await http("POST", "/v1/messages/text", { body, headers: c.auth });
      expect(res.status).to.equal(400);
      expect(res.json.code).to.equal("validation_failed");
      expect(res.json.errors).to.deep.equal([{ path, message: "must not contain the NUL character (U+0000)" }]);
    }
    const list = await http("GET", `/v1/messages?connection=${c.slug}%00`, { headers: c.auth });
    expect(list.status).to.equal(400);
    expect((list.json.errors as { path: string }[])[0]!.path).to.equal("query.connection");
    const rows = (await db().query(`SELECT 1 FROM messages WHERE workspace_id = $1`, [ws.id])) as unknown[];
    expect(rows).to.have.length(0);
    // Authentication comes first: without a key, the same body is a 401.
    expect((await http("POST", "/v1/messages/text", { body: cases[0]![0] })).status).to.equal(401);
  });
});

