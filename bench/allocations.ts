// Bytes allocated per accepted message, and where: POST /v1/messages/text at 50 concurrent
// clients, with V8's sampling heap profiler counting what is allocated (collected or not) during
// the run. Allocation drives the collector's share of the CPU, and unlike a rate it does not move
// with what else the machine's cores are doing: a change to the hot path shows here even when the
// rate benches cannot tell it from their spread. `--dispatcher on`: per message accepted, handed
// to the sandbox and reported read, as one all-in-one process does.
//
//   npx tsx bench/allocations.ts [--seconds 6] [--dispatcher off|on] [--top 12]
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/allocations.ts
import { Session } from "node:inspector/promises";
import { parseArgs } from "node:util";
import { load, sendRequest, startSendBench, table, untilRead } from "./harness.js";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "6" }, dispatcher: { type: "string", default: "off" }, top: { type: "string", default: "12" } },
});
const bench = await startSendBench(values.dispatcher);
const { url, headers, body } = sendRequest(bench);
const dispatching = values.dispatcher === "on";
const warm = await load({ url, connections: 50, seconds: 2, headers, body });
if (dispatching) await untilRead(bench, warm.startedAt);

interface SampledNode {
  callFrame: { functionName: string; url: string };
  selfSize: number;
  children: SampledNode[];
}
const session = new Session();
session.connect();
// Every sample, also of objects already collected: what was allocated, not what survived.
await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
const run = await load({ url, connections: 50, seconds: Number(values.seconds), headers, body });
// With the dispatcher on, until the run's messages are read: their hand-offs and receipts count.
if (dispatching) await untilRead(bench, run.startedAt);
const { profile } = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: SampledNode } };
session.disconnect();

// Sites by function and file (a package's files by the package's name).
const sites = new Map<string, number>();
let total = 0;
const where = (url: string) => url.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+)\/.*$/, "$1").replace(/^.*?\/((server|contract|bench)\/.*)$/, "$1") || "(native)";
const walk = (node: SampledNode) => {
  total += node.selfSize;
  if (node.selfSize > 0) {
    const site = `${node.callFrame.functionName || "(anonymous)"} ${where(node.callFrame.url)}`;
    sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
  }
  node.children.forEach(walk);
};
walk(profile.head);

const kb = (bytes: number) => (bytes / run.total / 1024).toFixed(1);
console.log(`\nallocated per request, ${run.total} requests, database: ${bench.gateway.database.embedded ? "embedded PGlite" : "PostgreSQL"}, dispatcher ${values.dispatcher}: ${kb(total)} KB`);
table(
  [...sites]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(values.top))
    .map(([site, bytes]) => ({ site, "KB/request": kb(bytes), share: `${((bytes / total) * 100).toFixed(1)} %` })),
);

await bench.stop();
process.exit(0);
