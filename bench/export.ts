// CSV export memory and throughput: GET /v1/messages/export over HTTP for a workspace with
// 1,000,000 messages (default), served by a gateway in its own process, so that its memory is
// measured without the load generator's or the database's. Targets (issue 26): at least 500,000
// rows/s, and the serving process's RSS growing by under 10 MB during the export (peak against
// idle). The run fails (exit 1) when a row is missing or the growth is 10 MB or more; the rate is
// reported, not enforced (on a shared machine it follows the load).
//
// Baseline, in the same run: the database alone, the same rows and columns read by a bare pg
// client in this process in keyset batches of 2,000, as text and discarded: ordinary SELECTs, as
// the export ran them before it read PostgreSQL's batches by COPY (docs/performance.md, Export).
// COPY costs the database less than these SELECTs, so on PostgreSQL the export can run faster than
// this baseline; the embedded database's export still runs SELECTs.
//
//   npx tsx bench/export.ts [--rows 1000000] [--runtime node|tsx] [--max-old-space MB] [--max-semi-space MB] [--min-semi-space MB]
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/export.ts
//
// `--runtime node` (the default) runs the gateway as production runs it: the compiled JavaScript,
// `node dist/server/main.js` (README, "Running in production"); dist/ is built first with
// `npm run build` when it is missing or older than a source file. `--runtime tsx` runs it as
// `npm start` does, through the TypeScript loader, which alone adds ~40-50 MB.
//
// `--max-old-space` starts the gateway with node's --max-old-space-size: V8 lets garbage from the
// export accumulate up to a multiple of the live heap before a full collection, and a cap shows
// how much of the growth is that rather than memory the export holds. `--max-semi-space` passes
// --max-semi-space-size: the young generation grows to 2 x 16 MB under any sustained allocation,
// and this caps it; `--min-semi-space` passes --min-semi-space-size, a young generation that
// starts at that size instead of growing to it during the export (docs/performance.md, Export).
//
// Without DATABASE_URL the embedded database runs in this (the measuring) process and the
// gateway reaches it over its socket, as a second process would.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { parseArgs } from "node:util";
import pg from "pg";
import { randomBytes } from "node:crypto";
import { ApiKeyService } from "../server/api-keys/service.js";
import { openDatabase } from "../server/db/database.js";
import { createLogger } from "../server/logger.js";
import { newId } from "../server/ids.js";
import { Plan } from "../server/workspace/entities.js";
import { WorkspaceService } from "../server/workspace/service.js";
import { distIsCurrent } from "../test/support/child-entry.js";
import { freePort } from "../test/support/ports.js";
import { createScratchDatabase } from "../test/setup.js";
import { startGatewayProcess } from "./harness.js";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "1000000" },
    runtime: { type: "string", default: "node" },
    "max-old-space": { type: "string" },
    "max-semi-space": { type: "string" },
    "min-semi-space": { type: "string" },
  },
});
const rows = Number(values.rows);
if (!Number.isInteger(rows) || rows < 1) throw new Error("--rows must be a positive integer");
const runtime = values.runtime;
if (runtime !== "node" && runtime !== "tsx") throw new Error("--runtime must be node or tsx");
if (runtime === "node") ensureBuilt();
const SAMPLE_MS = 50;
const TARGET_ROWS_PER_S = 500_000;
const GROWTH_LIMIT_MB = 10;

// ---- database: a scratch database on the machine's PostgreSQL, or the embedded one ----
let drop: (() => Promise<void>) | undefined;
let url = process.env.DATABASE_URL || undefined;
if (url) {
  const scratch = await createScratchDatabase(url);
  url = scratch.url;
  drop = scratch.drop;
}
const database = await openDatabase({ url, dataDir: null, logger: createLogger("silent") });
const db = database.dataSource;

// ---- a workspace, a read key, a connection, and the rows ----
const workspace = await new WorkspaceService(db).create("export bench", `bench-${Date.now()}@example.test`, "enterprise");
const [owner] = (await db.query(`SELECT m.user_id, u.email FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1`, [workspace.id])) as {
  user_id: string;
  email: string;
}[];
const plan = await db.getRepository(Plan).findOneByOrFail({ id: "enterprise" });
const { plaintext: apiKey } = await new ApiKeyService(db).issue(
  { kind: "session", workspaceId: workspace.id, userId: owner!.user_id, sessionId: "bench", email: owner!.email, role: "owner", plan },
  { name: "export bench", scopes: ["messages:read"], environment: "live" },
);
const connectionId = newId("con");
await db.query(
  `INSERT INTO connections (id, workspace_id, slug, state, linked, phone, transport, callback_nonce, callback_token_digest)
   VALUES ($1, $2, 'bench', 'connected', true, '+15550000000', 'sandbox', 'bench', $3)`,
  [connectionId, workspace.id, randomBytes(32)],
);
let started = performance.now();
// Realistic widths: message ids as the gateway makes them, mixed recipients and statuses, a
// provider id on most rows, bodies (which the export must skip) of a few dozen characters.
await db.query(
  `INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient, sender, body,
                         provider_message_id, error_code, created_at, updated_at)
   SELECT 'msg_' || upper(substr(md5(g::text), 1, 26)), $1, $2,
          CASE WHEN g % 5 = 0 THEN 'inbound' ELSE 'outbound' END,
          (ARRAY['queued','sent','delivered','read','failed'])[1 + g % 5],
          to_jsonb('+1555' || lpad((g % 10000000)::text, 7, '0')),
          CASE WHEN g % 5 = 0 THEN '+1666' || lpad((g % 10000000)::text, 7, '0') END,
          'message body number ' || g || ' with some text in it',
          CASE WHEN g % 7 <> 0 THEN 'PROV' || md5(g::text) END,
          CASE WHEN g % 5 = 4 THEN 'engine_rejected' END,
          now() - (g * interval '2 seconds'), now() - (g * interval '2 seconds')
     FROM generate_series(1, $3) g`,
  [workspace.id, connectionId, rows],
);
await db.query(`ANALYZE messages`);
const seedSeconds = (performance.now() - started) / 1000;
// 2 seconds apart: 1,000,000 rows span 23 days, inside the export's default 30-day window.
const days = Math.min(365, Math.ceil((rows * 2) / 86_400) + 1);

// ---- the gateway, in its own process ----
const port = await freePort();
const nodeOptions = [
  ...(values["max-old-space"] ? [`--max-old-space-size=${Number(values["max-old-space"])}`] : []),
  ...(values["max-semi-space"] ? [`--max-semi-space-size=${Number(values["max-semi-space"])}`] : []),
  ...(values["min-semi-space"] ? [`--min-semi-space-size=${Number(values["min-semi-space"])}`] : []),
];
const entry = runtime === "node" ? ["dist/server/main.js"] : ["--import", "tsx", "server/main.ts"];
const child = await startGatewayProcess({
  databaseUrl: database.url,
  secretKey: randomBytes(32).toString("base64"),
  env: { NODE_ENV: "development", DISPATCHER: "off" },
  args: [...nodeOptions, ...entry],
  readyMs: 60_000,
  port,
});
// Kept, not printed: shown only if the run fails (other modules' logs would bury the figures).
let childOutput = "";
child.stdout!.on("data", (d: Buffer) => (childOutput = (childOutput + d.toString()).slice(-20_000)));
child.stderr!.on("data", (d: Buffer) => (childOutput = (childOutput + d.toString()).slice(-20_000)));
const pid = child.pid!;
const baseUrl = `http://127.0.0.1:${port}`;
// Settled after start-up, before any export.
await new Promise((r) => setTimeout(r, 1000));
const startedRss = memory().rss;

/** VmRSS / VmHWM of the gateway process, in MB (kernel figures: exact, no sampling gaps for the peak). */
function memory(): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
}

/** Streams the export and counts it; the client keeps nothing. */
function download(query: string): Promise<{ status: number; bytes: number; lines: number; contentType: string | undefined }> {
  return new Promise((resolve, reject) => {
    get(`${baseUrl}/v1/messages/export${query}`, { headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      let bytes = 0;
      let lines = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes, lines, contentType: res.headers["content-type"] }));
      res.on("error", reject);
    }).on("error", reject);
  });
}

// Warm-up (module loading, JIT, pool): a small export, then settle.
await download(`?days=${days}&status=none`);
await download(`?days=1`);
await new Promise((r) => setTimeout(r, 1000));
const baseline = memory().rss;
// Reset the kernel's peak-RSS mark so VmHWM covers the export alone.
let peakReset = true;
try {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
} catch {
  // Not permitted here: VmHWM then covers the whole process life, still an upper bound.
  peakReset = false;
}

let sampledPeak = baseline;
const sampler = setInterval(() => {
  sampledPeak = Math.max(sampledPeak, memory().rss);
}, SAMPLE_MS);
started = performance.now();
const result = await download(`?days=${days}`);
const seconds = (performance.now() - started) / 1000;
clearInterval(sampler);
const { hwm, rss: after } = memory();
const exported = result.lines - 1;

const baselineRate = await databaseOnly();

const gatewayCommand = `node ${[...nodeOptions, ...entry].join(" ")}`;
console.log(
  `\nCSV export, ${rows.toLocaleString("en")} messages, database: ${database.embedded ? "embedded PGlite (in the measuring process)" : "PostgreSQL"}` +
    `, gateway: ${gatewayCommand}`,
);
console.table([
  {
    runtime,
    rows: exported,
    seconds: Number(seconds.toFixed(2)),
    "rows/s": Math.round(exported / seconds),
    "MB sent": Number((result.bytes / 1e6).toFixed(1)),
    "MB/s": Number((result.bytes / 1e6 / seconds).toFixed(1)),
    "RSS at start MB": Math.round(startedRss),
    "idle RSS MB": Math.round(baseline),
    "peak RSS MB (sampled)": Math.round(sampledPeak),
    "peak RSS MB (VmHWM)": Math.round(hwm),
    "growth MB": Math.round(hwm - baseline),
    "RSS after MB": Math.round(after),
    "baseline rows/s (database alone)": baselineRate,
    "export / baseline": Number((exported / seconds / baselineRate).toFixed(2)),
  },
]);
console.log(`seeding ${rows.toLocaleString("en")} rows took ${seedSeconds.toFixed(1)} s; status ${result.status}, ${result.contentType}`);
if (!peakReset) console.log("(could not reset the peak mark: VmHWM is the peak over the whole process life)");
const complete = result.status === 200 && exported === rows;
const growth = hwm - baseline;
const rate = Math.round(exported / seconds);
const flat = growth < GROWTH_LIMIT_MB;
console.log(`every row exported: ${complete ? "yes" : "NO"}`);
console.log(
  `${runtime}: idle ${Math.round(baseline)} MB (after the warm-up exports; ${Math.round(startedRss)} MB once started), ` +
    `peak ${Math.round(hwm)} MB, growth during the export ${growth.toFixed(1)} MB, ${rate.toLocaleString("en")} rows/s ` +
    `(database alone ${baselineRate.toLocaleString("en")} rows/s). ` +
    `Targets: growth under ${GROWTH_LIMIT_MB} MB ${flat ? "MET" : "NOT MET"}; ${TARGET_ROWS_PER_S.toLocaleString("en")} rows/s ${rate >= TARGET_ROWS_PER_S ? "MET" : "NOT MET"}`,
);
if (result.status !== 200) console.log(`gateway output (last lines):\n${childOutput.split("\n").slice(-20).join("\n")}`);

child.kill("SIGTERM");
await new Promise((r) => child.once("exit", r));
await database.close();
await drop?.();
process.exit(complete && flat ? 0 : 1);

/** The baseline: the export's rows read straight from the database, rows/s. */
async function databaseOnly(): Promise<number> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const textOnly = { getTypeParser: () => (value: string) => value };
    const t0 = performance.now();
    let count = 0;
    let before: unknown[] = [];
    for (;;) {
      const keyset = before.length ? `AND (m.created_at, m.id) < ($3::timestamptz, $4)` : "";
      const { rows: batch } = await client.query<string[]>({
        text: `SELECT m.id, m.created_at AT TIME ZONE 'UTC', m.updated_at AT TIME ZONE 'UTC', c.slug, m.direction, m.status,
                      m.recipient #>> '{}', coalesce(m.sender, c.phone), m.send_at AT TIME ZONE 'UTC', m.provider_message_id, m.error_code
                 FROM messages m JOIN connections c ON c.id = m.connection_id
                WHERE m.workspace_id = $1 AND m.created_at >= now() - make_interval(days => $2) ${keyset}
                ORDER BY m.created_at DESC, m.id DESC LIMIT 2000`,
        values: [workspace.id, days, ...before],
        rowMode: "array",
        types: textOnly,
      });
      count += batch.length;
      if (batch.length < 2000) break;
      const last = batch[batch.length - 1]!;
      before = [`${last[1]!.replace(" ", "T")}Z`, last[0]];
    }
    return Math.round(count / ((performance.now() - t0) / 1000));
  } finally {
    await client.end();
  }
}

/** Builds dist/ (`npm run build`) unless it is newer than every source the build compiles (distIsCurrent). */
function ensureBuilt(): void {
  if (distIsCurrent()) return;
  console.log("dist/ is missing or older than its sources: npm run build");
  const build = spawnSync("npm", ["run", "--silent", "build"], { stdio: "inherit" });
  if (build.status !== 0) throw new Error("npm run build failed");
}
