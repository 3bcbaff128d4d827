// Mocha's settings. `npm test` runs every test file, in parallel worker processes, each worker
// with a gateway and a scratch database of its own (test/setup.ts). Files named on the command line
// (`npx mocha test/x.test.ts`) run alone, in one process, in the order given.
//
// TEST_SUITES picks what a run takes (CI runs the database-dependent suites on both databases and
// the others once, in passes side by side: docs/decisions.md, "Test runs"):
//   all (default)  every file;
//   per-database   the API and process suites, which depend on the database under them;
//   once           the suites that do not (pure code, the packages, the browser): these run in
//                  one pass only.
const { readdirSync } = require("node:fs");

/** Database-independent, package and browser suites: the same result on either database. */
const ONCE = [
  // pure code, or loopback servers of their own
  "address-policy", "ai-vendors", "char-limits", "cursor", "embedded-session", "foreground", "ids", "json-body.property", "message-rules", "openapi",
  "recurrence", "recurrence.property", "safe-request", "sdk-client", "sdk-webhooks", "web-format",
  // the packages and the README's code; `npm start`, DATA_DIR and the CLI on the embedded database
  // whatever the run's
  "readme", "sdk-pack", "sdk-types", "dev-start", "data-dir",
  // the dashboard in Chromium
  "web", "web-actions", "web-ai", "web-chats", "web-consent", "web-first-run", "web-groups", "web-schedules",
].map((name) => `test/${name}.test.ts`);

/**
 * The longest files first (measured per file, one process at a time, on PostgreSQL and on the
 * embedded database), so that no worker starts a long file when the others are nearly done;
 * every other file follows in name order. One list for every TEST_SUITES: each pass takes its own.
 */
const LONGEST_FIRST = [
  // the API and process suites, by their time on the embedded database (the longer pass)
  "ai-runs", "baileys-network", "baileys-processes", "event-sinks", "engine-contract", "connections", "cli",
  "webhook-delivery", "conversations", "security", "messages-crash", "messages-read", "conversations-crash",
  "schedules-firing", "webhooks", "production-mail", "outage", "sandbox", "session-send",
  // the once-run suites
  "sdk-pack", "web", "data-dir", "web-first-run", "sdk-types", "web-ai", "web-actions", "ai-vendors", "web-groups",
  "web-chats", "dev-start", "web-schedules",
].map((name) => `test/${name}.test.ts`);

function testFiles() {
  const all = readdirSync("test", { recursive: true })
    .map((f) => `test/${f}`)
    .filter((f) => f.endsWith(".test.ts"))
    .sort();
  // A misspelt or renamed file would silently run in the wrong pass, or in no particular order.
  const unknown = [...ONCE, ...LONGEST_FIRST].filter((f) => !all.includes(f));
  if (unknown.length > 0) throw new Error(`.mocharc.cjs names test files that do not exist: ${unknown.join(", ")}`);
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
