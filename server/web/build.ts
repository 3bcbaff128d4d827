// Keeping web/dist in step with web/: `npm ci` builds it (the root `prepare` script); a start-up
// outside production rebuilds it when a source is newer than the build, so `npm start` and
// `npm test` never serve a missing or stale page.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "../logger.js";

/** The repository root: the nearest directory above this file holding web/vite.config.ts (sources or dist/). */
function rootDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "web", "vite.config.ts"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error("web/vite.config.ts not found above the gateway's sources");
    dir = up;
  }
}

export function webDistDir(): string {
  return join(rootDir(), "web", "dist");
}

/** The newest modification time in a file or folder tree (0 when it does not exist). */
export function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return readdirSync(path).reduce((m, name) => Math.max(m, newestMtime(join(path, name))), st.mtimeMs);
}

/** Whether web/dist is missing or older than what it is built from (the page, the SDK, the contract). */
export function webBuildIsStale(root = rootDir()): boolean {
  const built = join(root, "web", "dist", "index.html");
  if (!existsSync(built)) return true;
  const sources = ["web/src", "web/index.html", "web/vite.config.ts", "sdk/src", "contract"].map((p) => newestMtime(join(root, p)));
  return Math.max(...sources) > statSync(built).mtimeMs;
}

/** Builds the dashboard when stale; production only serves what `npm ci` / the image built. */
export function ensureWebBuild(logger: Logger, production: boolean): void {
  const root = rootDir();
  if (!webBuildIsStale(root)) return;
  const vite = join(root, "node_modules", ".bin", "vite");
  if (production || !existsSync(vite)) {
    logger.warn("the dashboard's build (web/dist) is missing or stale: run `npm run build:web`");
    return;
  }
  logger.info("building the dashboard (web/dist is missing or older than its sources)");
  const run = spawnSync(vite, ["build", "--logLevel", "warn"], { cwd: join(root, "web"), stdio: ["ignore", "inherit", "inherit"] });
  if (run.status !== 0) throw new Error(`building the dashboard failed (vite exited with ${run.status ?? run.signal})`);
}
