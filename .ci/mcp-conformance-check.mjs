// Reads the conformance runner's results (-o <dir>: one checks.json per scenario run) and fails
// on any failed check that .ci/mcp-conformance-not-applicable.txt does not list; prints the
// outcome of every listed one, so a reader sees what was set aside.
// Usage: node mcp-conformance-check.mjs <results dir> <scenario>
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { URL } from "node:url";

const say = (line) => process.stdout.write(`${line}\n`);
const complain = (line) => process.stderr.write(`${line}\n`);

const [dir, scenario] = process.argv.slice(2);
const notApplicable = new Set(
  readFileSync(new URL("./mcp-conformance-not-applicable.txt", import.meta.url), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#")),
);

function checkFiles(path) {
  return readdirSync(path).flatMap((name) => {
    const full = join(path, name);
    if (statSync(full).isDirectory()) return checkFiles(full);
    return name === "checks.json" ? [full] : [];
  });
}

const files = checkFiles(dir);
if (files.length === 0) {
  complain(`no results for ${scenario} in ${dir}`);
  process.exit(1);
}
const checks = files.flatMap((f) => JSON.parse(readFileSync(f, "utf8")));
const failed = checks.filter((c) => c.status === "FAILURE" && !notApplicable.has(`${scenario}:${c.id}`));
for (const c of checks.filter((c) => notApplicable.has(`${scenario}:${c.id}`))) say(`  (not applicable) ${c.id}: ${c.status}`);
for (const c of failed) complain(`  FAILED ${c.id}: ${c.errorMessage ?? c.description}`);
const passed = checks.filter((c) => c.status === "SUCCESS").length;
say(`${scenario}: ${passed} passed, ${failed.length} failed`);
process.exit(failed.length > 0 || passed === 0 ? 1 : 0);
