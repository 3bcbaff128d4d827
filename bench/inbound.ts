// Inbound: messages arriving from the network, from the sandbox's `POST /sandbox/v1/inbound`
// through its HTTP callback to `POST /v1/provider/sandbox/{token}` until each is recorded
// (message, timeline, `message.received` event, usage). Prints inbound messages/s from the first
// request to the last message stored, and the ratio against a baseline run alongside: the same
// requests at the same concurrency to an Express route doing one INSERT each on the same pool.
//
// With --ai, the connection has an enabled auto-mode AI policy whose credential points at a
// loopback Chat Completions server: each message also writes its debounce row, and the run counts
// until every contact has had its reply handed to the network (runs, vendor calls and replies are
// printed).
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/inbound.ts [--messages 5000] [--ai]
import { parseArgs } from "node:util";
import { startVendorOne } from "../test/support/vendors.js";
import { load, startBaseline, startBench, table } from "./harness.js";

const { values } = parseArgs({ options: { messages: { type: "string", default: "5000" }, ai: { type: "boolean", default: false } } });
const total = Number(values.messages);
const CLIENTS = 50;
// Each of autocannon's clients walks the list of bodies from its start, so the messages come from
// total / CLIENTS contacts, each writing CLIENTS times in a burst (the clients move in step).
const contacts = Math.max(1, Math.floor(total / CLIENTS));

const bench = await startBench(values.ai ? { OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8" } : {});
const db = bench.gateway.ctx.db;
const linked = "+19990000000"; // the number harness.ts pairs the first connection as
const vendor = values.ai ? await startVendorOne() : null;
if (vendor) await enableAi(vendor.url);

/** An enabled auto-mode policy on the bench's connection, through the API as a user sets one. */
async function enableAi(baseUrl: string): Promise<void> {
  const h = { authorization: `Bearer ${bench.apiKey}`, "content-type": "application/json" };
  const credential = await fetch(`${bench.gateway.url}/v1/ai/credentials`, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ provider: "vendorone_compatible", label: "bench", api_key: "sk-bench-0000", base_url: baseUrl }),
  });
  if (credential.status !== 201) throw new Error(`credential: ${credential.status} ${await credential.text()}`);
  const { id } = (await credential.json()) as { id: string };
  const policy = await fetch(`${bench.gateway.url}/v1/ai/policies/${bench.connectionSlugs[0]}`, {
    method: "PUT",
    headers: h,
    body: JSON.stringify({ credential_id: id, enabled: true, mode: "auto", model: "bench-model", system_instruction: "Answer briefly." }),
  });
  if (policy.status !== 200) throw new Error(`policy: ${policy.status} ${await policy.text()}`);
}

const bodies = Array.from({ length: contacts }, (_, i) => JSON.stringify({ to: linked, from: `+1555${String(i).padStart(7, "0")}`, body: "inbound benchmark" }));

async function inboundStored(): Promise<number> {
  const [row] = (await db.query(`SELECT count(*)::int AS n FROM messages WHERE workspace_id = $1 AND direction = 'inbound'`, [bench.workspaceId])) as { n: number }[];
  return row!.n;
}

const posted = await load({ url: `${bench.gateway.url}/sandbox/v1/inbound`, connections: CLIENTS, amount: total, headers: { "content-type": "application/json" }, body: bodies[0]!, bodies });
const expected = posted.total - posted.non2xx;
let stored = 0;
const deadline = Date.now() + 5 * 60_000;
while (Date.now() < deadline && (stored = await inboundStored()) < expected) await new Promise((r) => setTimeout(r, 50));
// From the load's start to the last message stored, as the baseline's rate runs from its start to
// its last answer (bench/end-to-end.ts says why not from this process's clock around the load).
const [{ last }] = (await db.query(`SELECT max(created_at) AS last FROM messages WHERE workspace_id = $1 AND direction = 'inbound'`, [bench.workspaceId])) as [
  { last: Date },
];
const seconds = (last.getTime() - posted.startedAt) / 1000;
const rate = stored / seconds;

let runs = { replied: 0, all: 0, waiting: 0, running: 0 };
let outcomes = "";
if (vendor) {
  // Every contact wrote several times within the debounce window or after it: each burst is one run.
  const until = Date.now() + 5 * 60_000;
  while (Date.now() < until) {
    const [row] = (await db.query(
      `SELECT count(*) FILTER (WHERE outcome = 'replied')::int AS replied, count(*)::int AS "all",
              (SELECT count(*)::int FROM ai_debounce) AS waiting, count(*) FILTER (WHERE outcome IS NULL)::int AS running
         FROM ai_runs`,
    )) as { replied: number; all: number; waiting: number; running: number }[];
    runs = row!;
    if (row!.waiting === 0 && row!.running === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const counted = (await db.query(`SELECT outcome, count(*)::int AS n FROM ai_runs GROUP BY outcome ORDER BY outcome`)) as { outcome: string; n: number }[];
  outcomes = counted.map((o) => `${o.outcome} ${o.n}`).join(", ");
}

const baseline = await startBaseline(db);
const base = await load({
  url: baseline.url,
  connections: CLIENTS,
  amount: total,
  headers: { "content-type": "application/json" },
  body: bodies[0]!,
  bodies,
});
baseline.close();

console.log(`\ninbound${vendor ? " with an AI policy (auto)" : ""}, ${total} messages from ${contacts} contacts, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}`);
table([
  {
    posted: expected,
    stored,
    "total s": seconds.toFixed(1),
    "inbound/s": Math.round(rate),
    "baseline req/s": Math.round(base.requestsPerSecond),
    "ratio inbound/baseline": (rate / base.requestsPerSecond).toFixed(2),
    ...(vendor ? { "AI runs": runs.all, replied: runs.replied, "vendor requests": vendor.requests.length } : {}),
  },
]);
if (vendor) console.log(`AI runs by outcome: ${outcomes}; debounce rows left ${runs.waiting}, runs unfinished ${runs.running}`);
await vendor?.close();
await bench.stop();
process.exit(0);
