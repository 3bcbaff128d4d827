// Pacing for real numbers (docs/engines.md): a connection's
// hand-offs are spaced by its engine's pace (Baileys: one every 2-5 s with jitter) and never
// faster than DISPATCH_RATE_PER_CONNECTION, summed over every gateway process: the processes
// reserve their slots from one row on the database's clock. Two dispatchers run here in place of
// the gateway's own, as two processes would.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { loadConfig } from "../server/config.js";
import { BAILEYS_DEFAULT_PACE } from "../server/engines/baileys/engine.js";
import { EngineRegistry, type Engine } from "../server/engines/engine.js";
import { MessageDispatcher, reservePace } from "../server/messages/dispatcher.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";
import { baileysEngine } from "./support/baileys.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;
const dbNow = async () => ((await db().query(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`)) as { ms: number }[])[0]!.ms;

describe("pacing across processes", function () {
  this.timeout(60_000);

  it("reserves a connection's slots one after another whoever asks, on the database's clock", async () => {
    const connectionId = `con_pace_${randomBytes(4).toString("hex")}`;
    const before = await dbNow();
    const waits = await Promise.all(Array.from({ length: 10 }, () => reservePace(db(), connectionId, 200)));
    const after = await dbNow();
    const [row] = (await db().query(`SELECT (extract(epoch FROM next_at) * 1000)::float8 AS ms FROM dispatch_pace WHERE connection_id = $1`, [connectionId])) as { ms: number }[];
    // Ten reservations of 200 ms, none overlapping: the row moved 2 s past the first one's start.
    expect(row!.ms - before).to.be.at.least(2_000);
    expect(row!.ms - after).to.be.at.most(2_000);
    // The last one waits for the nine before it (less what the calls themselves took).
    expect(Math.max(...waits)).to.be.at.least(1_800 - (after - before));
    expect(waits.filter((w) => w === 0).length).to.be.at.most(1);
  });

  it("spaces one connection's hand-offs by its engine's pace, summed over two dispatchers", async () => {
    const ws = await newWorkspace();
    const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
    const slug = `pace-${randomBytes(3).toString("hex")}`;
    await pairConnection(key.client, slug, uniquePhone());
    const { ctx } = testEnv().gateway;
    await ctx.dispatcher.stop();
    // The sandbox as it is, with the pace of a real number (shortened): 300-400 ms per message.
    const real = ctx.engines.get("sandbox")!;
    const paced: Engine = Object.assign(Object.create(real) as Engine, { pace: { minMs: 300, maxMs: 400 } });
    const engines = new EngineRegistry();
    engines.register(paced);
    // Each process alone would allow 1,000 a second: the engine's pace is what holds them back.
    const config = { ...ctx.config, dispatch: { ...ctx.config.dispatch, ratePerConnection: 1000 } };
    const processes = [new MessageDispatcher(ctx.db, config, engines, ctx.logger), new MessageDispatcher(ctx.db, config, engines, ctx.logger)];
    try {
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await http("POST", "/v1/messages/text", { body: { connection: slug, to: uniquePhone(), body: `paced ${i}` }, headers: { authorization: `Bearer ${key.key}` } });
        expect(res.status).to.equal(202);
        ids.push(res.json.id as string);
      }
      const start = await dbNow();
      for (const p of processes) p.start();
      const times = await waitFor(
        async () => (await db().query(`SELECT (extract(epoch FROM created_at) * 1000)::float8 AS ms FROM sandbox_deliveries WHERE message_id = ANY($1) ORDER BY created_at`, [ids])) as { ms: number }[],
        (r) => r.length === ids.length,
        30_000,
      );
      // Six messages: the sixth went at least five gaps of 300 ms after the first could.
      expect(times.at(-1)!.ms - start).to.be.at.least(5 * 300);
    } finally {
      for (const p of processes) await p.stop();
      ctx.dispatcher.start();
    }
  });

  it("gives a Baileys connection one message every 2-5 s by default, and BAILEYS_PACE_MS changes it", () => {
    expect(BAILEYS_DEFAULT_PACE).to.deep.equal({ minMs: 2_000, maxMs: 5_000 });
    const base = { DATA_DIR: testEnv().dataDir };
    expect(loadConfig(base).baileys.pace).to.deep.equal({ minMs: 2_000, maxMs: 5_000 });
    expect(loadConfig({ ...base, BAILEYS_PACE_MS: "1000-1000" }).baileys.pace).to.deep.equal({ minMs: 1_000, maxMs: 1_000 });
    for (const bad of ["5000-2000", "2000", "-1-2", "2s-5s"]) expect(() => loadConfig({ ...base, BAILEYS_PACE_MS: bad }), bad).to.throw(/BAILEYS_PACE_MS/);
    // The test gateway's engine runs the shortened pace it was configured with.
    expect(baileysEngine().pace).to.deep.equal({ minMs: 20, maxMs: 50 });
  });
});
