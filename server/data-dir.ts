// DATA_DIR holds what must stay the operator's own: the development secret key, the embedded
// database's files, and the development outbox (sign-in codes, invitation links). It is made 700
// and what the gateway writes there 600, whatever the umask the process was started with.
import { chmodSync, linkSync, mkdirSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Creates `dir` (and missing parents) if need be and leaves it readable by its owner only. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode is cut by the umask and leaves an existing directory as it was.
  chmodSync(dir, 0o700);
}

/**
 * Creates `file` (mode 600) holding `content` unless it exists; false when it does. The content is
 * there from the first moment, so a process starting at the same time reads it whole or not at
 * all: written to a temporary file, then linked, which fails if the name is taken.
 */
export function createPrivateFile(file: string, content: string): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/**
 * Owner-only modes for everything under `dir`: directories 700, files 600. The embedded database
 * unpacks its initial files mode 666 whatever the umask, and installs from before this rule left
 * theirs so; symbolic links are left alone (chmod would follow them out of the tree).
 */
export function restrictTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      chmodSync(path, 0o700);
      restrictTree(path);
    } else if (entry.isFile()) {
      chmodSync(path, 0o600);
    }
  }
}

/**
 * Files created from now on by this process get no group or other permission. The embedded
 * PostgreSQL creates some of its files with the umask's default mode; PostgreSQL's own server
 * sets the same umask (077) when it starts, for the same reason.
 */
export function ownerOnlyUmask(): void {
  process.umask(0o077);
}
