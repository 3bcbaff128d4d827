// AI reply latency: from the vendor's answer to the reply's delivery at the sandbox contact, in
// `auto` mode, through the real SDK against a loopback Chat Completions server. Runs one contact
// at a time (the latency of one reply, not a throughput) and prints p50/p99/max. The product's
// aim is well under 2 s on a quiet machine; the test suite asserts the behaviour only, since
// timing under a loaded test run says nothing about the gateway.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/ai-reply.ts [--runs 20]
import { parseArgs } from "node:util";
import { startVendorOne } from "../test/support/vendors.js";
import { startBench, table } from "./harness.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "20" } } });
const runs = Number(values.runs);

const bench = await startBench({ OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8", AI_DEBOUNCE_MS: "100" });
const vendor = await startVendorOne();
const base = bench.gateway.url;
const h = { authorization: `Bearer ${bench.apiKey}`, "content-type": "application/json" };
const slug = bench.connectionSlugs[0]!;

async function call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${path}`, { method, headers: h, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

const credential = await call("POST", "/v1/ai/credentials", { provider: "vendorone_compatible", label: "bench", api_key: "sk-bench-unused", base_url: vendor.url });
await call("PUT", `/v1/ai/policies/${slug}`, { credential_id: credential.id, enabled: true, mode: "auto", model: "bench-model", system_instruction: "Answer briefly." });
const [connection] = (await bench.gateway.ctx.db.query(`SELECT phone FROM connections WHERE slug = $1`, [slug])) as { phone: string }[];

let answeredAt = 0;
vendor.reply(() => {
  answeredAt = Date.now();
  return { text: "Yes, we open at ten." };
});

const latencies: number[] = [];
for (let i = 0; i < runs; i++) {
  const contact = `+1555${String(7_000_000 + i)}`;
  await call("POST", "/sandbox/v1/inbound", { to: connection!.phone, from: contact, body: "Do you open on Sunday?" });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const got = (await call("GET", `/sandbox/v1/received?to=${encodeURIComponent(contact)}`)) as { data?: { delivered_at: string }[] };
    const reply = got.data?.[0];
    if (reply) {
      latencies.push(Date.parse(reply.delivered_at) - answeredAt);
      break;
    }
    if (Date.now() > deadline) throw new Error(`no reply at ${contact} within 30 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
console.log(`\nAI reply latency (vendor answer → delivered at the contact), ${runs} runs, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}`);
table([{ runs, "p50 ms": at(0.5), "p99 ms": at(0.99), "max ms": latencies[latencies.length - 1]! }]);
await vendor.close();
await bench.stop();
process.exit(0);
