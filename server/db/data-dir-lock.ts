// One process owns DATA_DIR's embedded database; every other process (the CLI, a second gateway)
// reaches it through the address the owner publishes. Two engines on one data directory would
// each see only their own writes (a workspace the CLI "created" vanished) and can corrupt it.
//
// The lock is a file, DATA_DIR/svc-gateway.pid, as PostgreSQL's postmaster.pid: first line the
// owner's pid, second line its database URL once the database listens, third line the address its
// HTTP server listens on (a gateway's; the CLI has none). A lock whose pid is gone is stale (a
// crash, a SIGKILL) and is taken over.
import { readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPrivateFile, ensurePrivateDir } from "../data-dir.js";

export const LOCK_FILE = "svc-gateway.pid";

/** DATA_DIR is held by a process whose database cannot be used; the message is one line. */
export class DataDirInUseError extends Error {}

export interface DataDirLock {
  file: string;
  /** Writes the database URL (and the HTTP address, for a gateway) for other processes to use. */
  publish(url: string, httpUrl?: string): void;
  /** Removes the lock if it is still this process's. */
  release(): void;
}

export type LockOutcome = { held: true; lock: DataDirLock } | { held: false; pid: number; url: string; file: string };

/** Lock files this process holds: a lock naming our own pid but not in here is a previous life's (pid reuse in containers). */
const heldHere = new Set<string>();

/**
 * Takes DATA_DIR, or finds the running process that has it. An owner still starting (no URL yet)
 * is waited for up to `waitMs`.
 */
export async function lockDataDir(dataDir: string, waitMs = 60_000): Promise<LockOutcome> {
  ensurePrivateDir(dataDir);
  const file = join(dataDir, LOCK_FILE);
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (tryCreate(file)) return { held: true, lock: ownLock(file) };
    const holder = readLock(file);
    if (!holder) continue; // removed between our attempt and the read: try again
    if (!holder.pid || !alive(holder.pid) || (holder.pid === process.pid && !heldHere.has(file))) {
      // Stale. Two processes taking over at once may both unlink; creating by link() lets only one
      // of them create the new lock (createPrivateFile), as PostgreSQL's own retry loop does.
      removeIfSame(file, holder.raw);
      continue;
    }
    if (holder.url) return { held: false, pid: holder.pid, url: holder.url, file };
    if (Date.now() > deadline) {
      throw new DataDirInUseError(
        `DATA_DIR ${dataDir} is held by process ${holder.pid}, which has published no database address for ${Math.round(waitMs / 1000)} s; ` +
          `stop that process, or delete ${file} if it is not a svc-gateway`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Creates the lock with its content in one step: a reader never sees it empty. */
function tryCreate(file: string): boolean {
  if (!createPrivateFile(file, `${process.pid}\n`)) return false;
  heldHere.add(file);
  return true;
}

function ownLock(file: string): DataDirLock {
  const onExit = () => release();
  // A process that exits without closing its database (process.exit after an error) leaves no lock.
  process.on("exit", onExit);
  function release() {
    process.off("exit", onExit);
    if (!heldHere.delete(file)) return;
    const current = readLock(file);
    if (current?.pid === process.pid) removeIfSame(file, current.raw);
  }
  return {
    file,
    publish(url, httpUrl) {
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${process.pid}\n${url}\n${httpUrl ? `${httpUrl}\n` : ""}`, { mode: 0o600 });
      renameSync(tmp, file);
    },
    release,
  };
}

/** The gateway that holds DATA_DIR and where its HTTP server listens; null when none runs (or it has not said). */
export function runningGateway(dataDir: string): { pid: number; httpUrl: string } | null {
  const holder = readLock(join(dataDir, LOCK_FILE));
  if (!holder?.pid || !holder.httpUrl || !alive(holder.pid)) return null;
  return { pid: holder.pid, httpUrl: holder.httpUrl };
}

function readLock(file: string): { raw: string; pid: number; url: string | undefined; httpUrl: string | undefined } | null {
  let raw: string;
  try {
    raw = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  const [pidLine = "", url, httpUrl] = raw.split("\n");
  const pid = /^\d+$/.test(pidLine.trim()) ? Number(pidLine) : 0;
  return { raw, pid, url: url?.trim() || undefined, httpUrl: httpUrl?.trim() || undefined };
}

function removeIfSame(file: string, raw: string): void {
  try {
    if (readFileSync(file, "utf8") === raw) unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/** Signal 0 checks existence; EPERM means it exists under another user. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
