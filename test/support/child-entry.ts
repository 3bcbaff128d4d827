// What a child gateway (and the operator's CLI) runs: the production build (`node dist/server/main.js`) when dist/ is
// newer than every source it is built from, as in CI, which builds it before the tests; else the
// sources through tsx, as `npm start` does. The tsx loader nearly doubles a process's start (it
// compiles every module it loads), and a run starts dozens of children. Decided once per run in
// the main process (test/setup.ts), so that no worker sees dist/ half rebuilt: a test that builds
// dist/ itself (test/production-baileys.test.ts) only does so when children do not use it.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";
import { newestMtime } from "../../server/web/build.js";

const ROOT = resolve(import.meta.dirname, "../..");
const DIST_MAIN = join(ROOT, "dist", "server", "main.js");
const DIST_CLI = join(ROOT, "dist", "server", "cli-main.js");
/** What tsconfig.build.json compiles, and the settings it compiles with. */
const BUILT_FROM = ["server", "jobs", "contract", "sdk/src", "tsconfig.json", "tsconfig.build.json", "package.json"];
/** The module that replaces the Baileys library's socket in every gateway process of a test run. */
export const STAND_IN_MODULE = join(ROOT, "test", "support", "baileys-stand-in.ts");
/** Beside the build, so that its relative imports of the server resolve to the built modules. */
const BUILT_STAND_IN = join(ROOT, "dist", "test", "support", "baileys-stand-in.js");

/** Whether dist/ was built after the last change to what it is built from. */
export function distIsCurrent(): boolean {
  if (!existsSync(DIST_MAIN)) return false;
  return Math.max(...BUILT_FROM.map((p) => newestMtime(join(ROOT, p)))) < statSync(DIST_MAIN).mtimeMs;
}

/** Main process: chooses the children's entry point for the whole run (TEST_CHILD_ENTRY) and readies it. */
export function prepareChildGateways(): void {
  if (process.env.TEST_CHILD_ENTRY) return;
  if (!distIsCurrent()) {
    process.env.TEST_CHILD_ENTRY = "sources";
    return;
  }
  buildStandIn();
  process.env.TEST_CHILD_ENTRY = "dist";
}

/** The stand-in is test code, not part of the build: compiled on its own (types only erased), beside dist/. */
export function buildStandIn(): void {
  const source = readFileSync(STAND_IN_MODULE, "utf8");
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, fileName: STAND_IN_MODULE });
  mkdirSync(dirname(BUILT_STAND_IN), { recursive: true });
  // Written aside and renamed: CI's test passes run side by side, and a child of one may load it
  // while another pass writes it again.
  const written = `${BUILT_STAND_IN}.${process.pid}`;
  writeFileSync(written, outputText);
  renameSync(written, BUILT_STAND_IN);
}

/** Whether this run's children start from dist/ (so dist/ is current and must stay as it is). */
export function childrenRunDist(): boolean {
  return process.env.TEST_CHILD_ENTRY === "dist";
}

/** The node arguments that start a child gateway, and the stand-in module it loads. */
export function childEntry(): { args: string[]; standIn: string } {
  if (childrenRunDist()) return { args: [DIST_MAIN], standIn: BUILT_STAND_IN };
  return { args: ["--import", "tsx", join(ROOT, "server", "main.ts")], standIn: STAND_IN_MODULE };
}

/** The node arguments that run the operator's CLI (`bin/svc-gateway.js`, or its entry in dist/), before its own arguments. */
export function cliEntry(): string[] {
  return childrenRunDist() ? [DIST_CLI] : [join(ROOT, "bin", "svc-gateway.js")];
}
