// Hand-offs in batches: when a connection's pace allows several messages at once (a high
// DISPATCH_RATE_PER_CONNECTION), the dispatcher marks them in one statement, hands them to the
// engine in one call (sendMany) and records them in one statement. Order, exactly-once delivery
// and per-message retries must hold as they do one at a time. A dispatcher with a fast pace runs
// here in place of the gateway's own.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { EngineRegistry, type Engine, type EngineConnection, type OutboundMessage } from "../server/engines/engine.js";
import { MessageDispatcher } from "../server/messages/dispatcher.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;

async function statuses(ids: string[]): Promise<string[]> {
  const rows = (await db().query(`SELECT id, status FROM messages WHERE id = ANY($1)`, [ids])) as { id: string; status: string }[];
  const byId = new Map(rows.map((r) => [r.id, r.status]));
  return ids.map((id) => byId.get(id)!);
}

describe("hand-offs in batches", () => {
  let fast: MessageDispatcher | undefined;
  /** The size of every sendMany call the engine got. */
  const batches: number[] = [];
  let auth: Record<string, string>;
  let slug: string;

  before(async function () {
    // Pairing and stopping the gateway's dispatcher wait on the sandbox's reports: a loaded machine takes longer.
    this.timeout(60_000);
    const ws = await newWorkspace();
    const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
    slug = `h-${randomBytes(3).toString("hex")}`;
    const { id: connectionId } = await pairConnection(key.client, slug, uniquePhone());
    auth = { authorization: `Bearer ${key.key}` };
    const { ctx } = testEnv().gateway;
    await ctx.dispatcher.stop();
    // The sandbox engine as it is, with the batch calls of this file's connection counted.
    const real = ctx.engines.get("sandbox")!;
    const counted: Engine = Object.assign(Object.create(real) as Engine, {
      sendMany: (connection: EngineConnection, messages: OutboundMessage[]) => {
        if (connection.id === connectionId) batches.push(messages.length);
        return real.sendMany!(connection, messages);
      },
    });
    const engines = new EngineRegistry();
    engines.register(counted);
    // 1,000 a second: batches of up to 50 per connection.
    fast = new MessageDispatcher(ctx.db, { ...ctx.config, dispatch: { ...ctx.config.dispatch, ratePerConnection: 1000 } }, engines, ctx.logger);
    // What earlier files of this worker left queued (a stopped dispatcher gives its unstarted
    // claims back) goes out first, so that the sandbox's failures below hit this file's sends.
    // Best effort: a row the claim skips (a restricted account's) would stay, and is no matter here.
    fast.start();
    await waitFor(
      () => db().query(`SELECT count(*)::int AS n FROM dispatch_queue q JOIN connections c ON c.id = q.connection_id WHERE c.transport = 'sandbox' AND q.available_at <= now()`) as Promise<{ n: number }[]>,
      ([r]) => r!.n === 0,
      30_000,
    ).catch(() => undefined);
    await fast.stop();
  });

  after(async () => {
    // The gateway's own dispatcher comes back whatever happened above: later files of this worker send through it.
    try {
      await fast?.stop();
      await sandbox("POST", "/faults", { fail_next_sends: 0 });
    } finally {
      testEnv().gateway.ctx.dispatcher.start();
    }
  });

  async function sendMany(n: number, to: string, tag: string): Promise<string[]> {
    const ids: string[] = [];
    // One after another, so that their order is defined.
    for (let i = 0; i < n; i++) {
      const res = await http("POST", "/v1/messages/text", { body: { connection: slug, to, body: `${tag} ${i}` }, headers: auth });
      expect(res.status).to.equal(202);
      ids.push(res.json.id as string);
    }
    return ids;
  }

  it("hands a burst of one connection to the engine in order, each message once, every step in its timeline", async () => {
    const to = uniquePhone();
    const tag = randomBytes(3).toString("hex");
    const ids = await sendMany(30, to, tag);
    // The queue's rows are not kept in their order on disk: rows written again (as a busy table's
    // are) move after the others, and a claim must not hand them off in that order.
    await db().query(`UPDATE dispatch_queue SET last_error = last_error WHERE message_id = ANY($1)`, [ids.filter((_, i) => i % 2 === 0)]);
    fast!.start();
    await waitFor(() => statuses(ids), (s) => s.every((x) => x === "read"), 20_000);
    await fast!.stop();
    const got = (await http("GET", `/sandbox/v1/received?to=${encodeURIComponent(to)}`)).json;
    const bodies = ((got.data ?? got) as { body: string }[]).map((r) => r.body);
    expect(bodies).to.deep.equal(ids.map((_, i) => `${tag} ${i}`));
    const timelines = (await db().query(
      `SELECT message_id, array_agg(status ORDER BY id) AS steps FROM message_timeline WHERE message_id = ANY($1) GROUP BY message_id`,
      [ids],
    )) as { message_id: string; steps: string[] }[];
    expect(timelines).to.have.length(30);
    for (const t of timelines) {
      expect(t.steps.filter((s) => s === "submitting")).to.have.length(1);
      expect(t.steps.filter((s) => s === "submitted")).to.have.length(1);
      expect(t.steps.indexOf("submitting")).to.be.lessThan(t.steps.indexOf("submitted"));
    }
    // All thirty went to the engine in one call.
    expect(batches).to.deep.equal([30]);
    const queue = (await db().query(`SELECT count(*)::int AS n FROM dispatch_queue WHERE message_id = ANY($1)`, [ids])) as { n: number }[];
    expect(queue[0]!.n).to.equal(0);
  });

  it("retries only the messages of a batch the engine failed, and sends each once", async () => {
    const to = uniquePhone();
    const tag = randomBytes(3).toString("hex");
    const ids = await sendMany(6, to, tag);
    expect((await sandbox("POST", "/faults", { fail_next_sends: 2 })).status).to.equal(200);
    fast!.start();
    await waitFor(() => statuses(ids), (s) => s.every((x) => x === "read"), 20_000);
    await fast!.stop();
    const retried = (await db().query(
      `SELECT DISTINCT message_id FROM message_timeline WHERE message_id = ANY($1) AND status = 'queued' AND detail LIKE 'retrying after%'`,
      [ids],
    )) as { message_id: string }[];
    // The sandbox failed the first two sends it was handed, the burst's first two: those two only are retried.
    expect(retried.map((r) => r.message_id).sort()).to.deep.equal(ids.slice(0, 2).sort());
    const deliveries = (await db().query(`SELECT message_id FROM sandbox_deliveries WHERE message_id = ANY($1)`, [ids])) as { message_id: string }[];
    expect(deliveries.map((d) => d.message_id).sort()).to.deep.equal([...ids].sort());
  });
});
