// A second gateway process on the test run's database, started the way an operator starts one
// (`node dist/server/main.js`, or `tsx server/main.ts` when there is no current build:
// child-entry.ts, with environment variables), so tests can kill it mid-work or run it with
// settings of its own.
import { spawn, type ChildProcess } from "node:child_process";
import { scratchDir, testEnv } from "../setup.js";
import { childEntry } from "./child-entry.js";
import { freePort } from "./ports.js";

export interface ChildGateway {
  url: string;
  process: ChildProcess;
  /** SIGKILL: no shutdown, no cleanup, as a crash or an OOM kill. */
  kill(): Promise<void>;
  /** SIGTERM: the graceful shutdown path. Resolves with the exit code. */
  terminate(): Promise<number | null>;
  output(): string;
  /** Resolves with the exit code once the process has ended by itself or been stopped. */
  exited: Promise<number | null>;
}

export interface ChildOptions {
  /** Started under this umask (e.g. "000"), as an operator's shell may be set. */
  umask?: string;
  /** Resolve once /readyz answers 200 (default); false: as soon as the process is spawned. */
  ready?: boolean;
}

/** The child's environment; a variable given as undefined is left unset (e.g. DATABASE_URL for the embedded database). */
export function childEnv(env: Record<string, string | undefined> = {}): Record<string, string> {
  const { databaseUrl, gateway, jobsMongoUrl } = testEnv();
  const merged: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? "",
    NODE_ENV: "test",
    DATABASE_URL: databaseUrl,
    DATA_DIR: scratchDir("child-"),
    // The jobs where the test gateway has them (the MongoDB-wire emulator, when the run uses it).
    JOBS_MONGODB_URL: jobsMongoUrl,
    // Same key as the test gateway: callback tokens and cursors must agree across processes.
    SECRET_KEY: gateway.ctx.config.secretKey.toString("base64"),
    LOG_LEVEL: "info",
    AI_DEBOUNCE_MS: String(gateway.ctx.config.ai.debounceMs),
    // The Baileys engine's socket stand-in: a production child refuses it, so it gets none.
    BAILEYS_SOCKET_MODULE: env.NODE_ENV === "production" ? undefined : childEntry().standIn,
    ...env,
  };
  return Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined));
}

/** The gateway's main module (child-entry.ts), through `sh` when a umask is asked for. */
export function spawnMain(env: Record<string, string>, options: ChildOptions = {}): ChildProcess {
  const { args } = childEntry();
  const spawnOptions = { cwd: process.cwd(), env, stdio: ["ignore", "pipe", "pipe"] as ["ignore", "pipe", "pipe"] };
  if (!options.umask) return spawn(process.execPath, args, spawnOptions);
  return spawn("sh", ["-c", `umask ${options.umask} && exec "$0" "$@"`, process.execPath, ...args], spawnOptions);
}

/** How long a child gateway may take to become ready (a loaded machine's start-up); a test that starts children allows this per child in its own timeout. */
export const CHILD_READY_MS = 60_000;

/** A start or a graceful stop slower than this is reported with the child's output (the test still decides). */
const SLOW_CHILD_MS = 15_000;

/** A graceful stop still running after this is a hang: the child is killed and the stop fails with its output. */
export const CHILD_STOP_MS = 60_000;

/** The last `n` lines of a child's output, to show with a failure. */
export function lastLines(output: string, n = 40): string {
  return output.split("\n").slice(-n).join("\n");
}

/** Says on stderr what a child did when its start or stop took long: a loaded run's slow test shows why. */
function slowChild(what: "start" | "stop", since: number, output: () => string): void {
  const took = Date.now() - since;
  if (took < SLOW_CHILD_MS) return;
  const tail = lastLines(output());
  process.stderr.write(`child gateway: ${what} took ${took} ms; the last lines of its output:\n${tail}\n`);
}

/** Whether `url` is a ready gateway: its /readyz answers the gateway's own body, not just any 200. */
async function isReadyGateway(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`);
    return res.ok && ((await res.json()) as { status?: unknown }).status === "ready";
  } catch {
    return false;
  }
}

export async function startChildGateway(env: Record<string, string | undefined> = {}, options: ChildOptions = {}): Promise<ChildGateway> {
  const port = await freePort();
  const child = spawnMain(childEnv({ PORT: String(port), ...env }), options);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  // The embedded database takes a few seconds more to start than a connection to PostgreSQL.
  const startedAt = Date.now();
  const deadline = startedAt + CHILD_READY_MS;
  while (options.ready !== false) {
    if (child.exitCode !== null) throw new Error(`child gateway exited ${child.exitCode}:\n${out}`);
    const ready = await isReadyGateway(url);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`child gateway not ready within ${CHILD_READY_MS / 1000} s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  slowChild("start", startedAt, () => out);
  return {
    url,
    process: child,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async terminate() {
      const stoppingAt = Date.now();
      child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<"hung">((resolve) => (timer = setTimeout(() => resolve("hung"), CHILD_STOP_MS)));
      const code = await Promise.race([exited, hung]).finally(() => clearTimeout(timer));
      if (code === "hung") {
        child.kill("SIGKILL");
        await exited;
        throw new Error(`child gateway still stopping ${CHILD_STOP_MS / 1000} s after SIGTERM; the last lines of its output:\n${lastLines(out, 60)}`);
      }
      slowChild("stop", stoppingAt, () => out);
      return code;
    },
    exited,
    output: () => out,
  };
}

/**
 * Runs `body` while the test gateway works no job at all, so that the child gateways it starts do
 * (a stopped AI runner bounces its jobs, and a bounced job may stay with the process that bounced
 * it; a lock seen meanwhile is a child's).
 */
export async function jobsLeftToChildren<T>(body: () => Promise<T>): Promise<T> {
  const jobs = testEnv().gateway.ctx.jobs;
  await jobs.pause();
  try {
    return await body();
  } finally {
    await jobs.start();
  }
}
