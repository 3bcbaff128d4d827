// Mocha's settings. `npm test` runs every test file, in parallel worker processes, each worker
// with a gateway and a scratch database of its own (test/setup.ts). Files named on the command line
// (`npx mocha test/x.test.ts`) run alone, in one process, in the order given.
//
// TEST_SUITES picks what a run takes (CI runs the suite twice: docs/decisions.md, "Test runs"):
//   all (default)  every file;
//   per-database   the API and process suites, which depend on the database under them;
//   once           the suites that do not (pure code, the packages, the browser): these run in
//                  one pass only.
const { readdirSync } = require("node:fs");

/** Database-independent, package and browser suites: the same result on either database. */
const ONCE = [
  // pure code, or loopback servers of their own
  "address-policy", "ai-vendors", "char-limits", "cursor", "ids", "json-body.property", "message-rules", "openapi",
  "recurrence", "recurrence.property", "safe-request", "sdk-client", "sdk-webhooks",
  // the packages and the README's code; `npm start` on the embedded database
  "readme", "sdk-pack", "sdk-types", "dev-start",
  // the dashboard in Chromium
  "web", "web-ai", "web-chats", "web-consent", "web-first-run", "web-groups", "web-schedules",
].map((name) => `test/${name}.test.ts`);

/**
 * The longest files first (measured), so that no worker starts a long file when the others are
 * nearly done; every other file follows in name order.
 */
const LONGEST_FIRST = [
  "outage", "ai-runs", "baileys-processes", "web-first-run", "messages-crash", "schedules-firing", "web", "web-ai",
  "data-dir", "sdk-pack", "session-send", "provider-callbacks", "webhook-delivery", "production-baileys",
].map((name) => `test/${name}.test.ts`);

function testFiles() {
  const all = readdirSync("test", { recursive: true })
    .map((f) => `test/${f}`)
    .filter((f) => f.endsWith(".test.ts"))
    .sort();
  const suites = process.env.TEST_SUITES || "all";
  const picked = {
    all: () => all,
    once: () => all.filter((f) => ONCE.includes(f)),
    "per-database": () => all.filter((f) => !ONCE.includes(f)),
  }[suites];
  if (!picked) throw new Error(`TEST_SUITES=${suites}: expected all, per-database or once`);
  const files = picked();
  return [...LONGEST_FIRST.filter((f) => files.includes(f)), ...files.filter((f) => !LONGEST_FIRST.includes(f))];
}

// Mocha adds its configured files to those of the command line: name none when a file is given.
const namedFiles = process.argv.slice(2).some((arg) => /\.test\.[cm]?[jt]s$/.test(arg));

module.exports = {
  "node-option": ["import=tsx"],
  require: ["test/setup.ts"],
  timeout: 20000,
  exit: true,
  ...(namedFiles
    ? {}
    : {
        spec: testFiles(),
        parallel: true,
        // One worker per core of a 2-core machine: a third made the child gateways' start-ups
        // (CPU-bound) contend and time out on a loaded machine.
        jobs: 2,
      }),
};
