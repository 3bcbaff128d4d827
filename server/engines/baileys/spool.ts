// The engine's reports (inbound messages, receipts, state changes) are the only record of what the
// library has already acknowledged to the network: once the socket has acked a message, the network
// never sends it again. So a report is written to a spool file in DATA_DIR (fsynced) before it is
// applied, and the file is removed only after the provider callback code committed it. A database
// that is away is waited for however long it takes; a process that dies leaves its files to the
// next process started on the same DATA_DIR, which adopts them. Each event carries its event_id
// from the moment it is spooled, so a report applied before a crash and again after it is applied
// once (the callback code deduplicates on event_id in the same transaction).
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { MAX_PROVIDER_EVENTS, ProviderCallbackBody, type ProviderEvent } from "../../../contract/index.js";
import { isDatabaseUnavailable } from "../../db/availability.js";
import { ensurePrivateDir } from "../../data-dir.js";
import type { Logger } from "../../logger.js";
import { randomToken } from "../../secrets.js";
import type { Report } from "./session.js";
import { backoffMs } from "../../backoff.js";

/** Attempts of a report that fails for another reason than the database being away, before it is set aside. */
export const SPOOL_FAILED_ATTEMPTS = 6;
/** The longest wait between two attempts while the database is away. */
const MAX_BACKOFF_MS = 15_000;

interface Spooled {
  connectionId: string;
  events: ProviderEvent[];
}

export type ApplyReport = (connectionId: string, body: ProviderCallbackBody) => Promise<void>;

export class ReportSpool {
  /** This process's own directory; others' (of dead processes) are adopted. */
  readonly dir: string;
  private seq = 0;
  private readonly chains = new Map<string, Promise<void>>();
  /** Files queued for delivery (so that reopening does not queue them twice). */
  private readonly queued = new Set<string>();
  private closing = false;

  constructor(
    private readonly root: string,
    private readonly apply: ApplyReport,
    private readonly logger: Logger,
    private readonly backoffBaseMs = 250,
  ) {
    this.dir = join(root, `${hostname()}~${process.pid}~${randomToken(4)}`);
  }

  /** Creates the spool and takes up what is left: this process's own (closed before) and dead processes'. */
  open(): void {
    this.closing = false;
    ensurePrivateDir(this.root);
    ensurePrivateDir(this.dir);
    ensurePrivateDir(join(this.root, "failed"));
    for (const f of this.pending().sort()) {
      const file = join(this.dir, f);
      const spooled = read(file);
      if (spooled && !this.queued.has(file)) this.enqueue(spooled.connectionId, file);
    }
    this.adopt();
  }

  /**
   * Spools the events of one connection (an event_id for each, batches of at most
   * MAX_PROVIDER_EVENTS, so that a backlog of any size is recorded whole) and applies them in order.
   * Returns once they are on disk; false when they fail the wire format (a bug, logged).
   */
  add(connectionId: string, events: Report[]): boolean {
    const parsed = events.map((e) => ({ ...e, event_id: e.event_id ?? `bly_${randomToken(12)}` }));
    for (let i = 0; i < parsed.length; i += MAX_PROVIDER_EVENTS) {
      const body = ProviderCallbackBody.safeParse({ events: parsed.slice(i, i + MAX_PROVIDER_EVENTS) });
      if (!body.success || !("events" in body.data)) {
        this.logger.error({ connection_id: connectionId, types: events.map((e) => e.type), issues: body.success ? [] : body.error.issues }, "baileys report does not validate; dropped");
        return false;
      }
      const file = join(this.dir, `${Date.now().toString().padStart(15, "0")}-${String(this.seq++).padStart(9, "0")}.json`);
      writeDurably(file, JSON.stringify({ connectionId, events: body.data.events } satisfies Spooled));
      this.enqueue(connectionId, file);
    }
    return true;
  }

  /** Resolves once every report of the connection spooled so far is applied (or set aside). */
  settled(connectionId: string): Promise<void> {
    return this.chains.get(connectionId) ?? Promise.resolve();
  }

  /** Files waiting (this process's): none once every report is applied. */
  pending(): string[] {
    return existsSync(this.dir) ? readdirSync(this.dir).filter((f) => f.endsWith(".json")) : [];
  }

  /** Waits up to `ms` for the reports in flight; what is left stays spooled for the next start. */
  async close(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.chains.values()), new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
    this.closing = true;
  }

  /** Takes up the spool directories of processes of this host that are no longer running. */
  adopt(): void {
    const mine = this.dir.slice(this.root.length + 1);
    for (const entry of readdirSync(this.root, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name === mine || entry.name === "failed") continue;
      const [host, pid] = entry.name.split("~");
      if (host !== hostname() || alive(Number(pid))) continue;
      const from = join(this.root, entry.name);
      for (const f of readdirSync(from).sort()) {
        if (!f.endsWith(".json")) continue;
        // Renamed into this process's directory: one adopter only, and the order (by name) is kept.
        const to = join(this.dir, `${f.slice(0, -5)}-${entry.name}.json`);
        try {
          renameSync(join(from, f), to);
        } catch {
          continue;
        }
        const spooled = read(to);
        if (spooled) this.enqueue(spooled.connectionId, to);
      }
      try {
        rmdirSync(from);
      } catch {
        // another adopter, or a file being written: left for later
      }
    }
  }

  private enqueue(connectionId: string, file: string): void {
    this.queued.add(file);
    const previous = this.chains.get(connectionId) ?? Promise.resolve();
    const next = previous.then(() => this.deliver(file)).finally(() => this.queued.delete(file));
    this.chains.set(connectionId, next);
    void next.finally(() => {
      if (this.chains.get(connectionId) === next) this.chains.delete(connectionId);
    });
  }

  private async deliver(file: string): Promise<void> {
    const spooled = read(file);
    if (!spooled) return;
    for (let attempt = 1, failures = 0; !this.closing; attempt++) {
      try {
        await this.apply(spooled.connectionId, { events: spooled.events });
        unlinkSync(file);
        return;
      } catch (err) {
        // The database away: wait for it, however long. Anything else is a bug, retried a few times.
        if (!isDatabaseUnavailable(err) && ++failures >= SPOOL_FAILED_ATTEMPTS) {
          renameSync(file, join(this.root, "failed", file.slice(this.dir.length + 1)));
          this.logger.error({ err, connection_id: spooled.connectionId, types: spooled.events.map((e) => e.type) }, "baileys report set aside in the spool's failed directory after retries");
          return;
        }
        if (attempt === 1) this.logger.warn({ err, connection_id: spooled.connectionId }, "baileys report not applied yet; kept in the spool and retried");
        await new Promise((r) => setTimeout(r, backoffMs(attempt + 1, this.backoffBaseMs, MAX_BACKOFF_MS, { jitter: 0 })));
      }
    }
  }
}

function writeDurably(file: string, content: string): void {
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

function read(file: string): Spooled | null {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Spooled;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
