// Embedded PostgreSQL for development and tests without a server: PGlite (PostgreSQL compiled to
// WebAssembly) behind a socket, so the ordinary `pg` driver reaches it like any server.
//
// PGlite is one backend session. Many client connections share it, so their protocol messages
// must not interleave: pglite-socket's own queue keeps a client's messages together only inside a
// transaction, and outside one it mixes the Parse/Bind/Execute/Sync of concurrent extended-protocol
// queries ("bind message supplies 1 parameters, but prepared statement requires 11", wrong rows).
// `SessionQueue` below gives one client the backend from its first message until its exchange is
// complete (Sync or a simple Query answered outside a transaction), and serves the others after.
import { existsSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketHandler } from "@electric-sql/pglite-socket";
import { ensurePrivateDir, ownerOnlyUmask, restrictTree } from "../data-dir.js";
import type { Logger } from "../logger.js";
import { initialFiles } from "./embedded-template.js";

/** Connections are multiplexed onto one backend and cheap; headroom lets a second process share it. */
export const EMBEDDED_MAX_CONNECTIONS = 48;

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

interface Pending {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: unknown) => void;
}

const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const TERMINATE = 0x58; // 'X'

/** A queue with the interface PGLiteSocketHandler expects, holding the backend per exchange. */
class SessionQueue {
  private readonly queue: Pending[] = [];
  private owner: number | null = null;
  private processing = false;

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.process();
    });
  }

  clearQueueForHandler(handlerId: number): void {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i]!.handlerId === handlerId) this.queue.splice(i, 1)[0]!.reject(new Error("Handler disconnected"));
    }
  }

  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return;
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK");
    this.owner = null;
    void this.process();
  }

  private async process(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      for (;;) {
        const index = this.owner === null ? 0 : this.queue.findIndex((p) => p.handlerId === this.owner);
        if (index < 0 || this.queue.length === 0) break;
        const next = this.queue.splice(index, 1)[0]!;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(next.message, {
              onRawData: (data: Uint8Array) => {
                bytes += data.length;
                next.onData(data);
              },
            }),
          );
        } catch (err) {
          this.owner = null;
          next.reject(err);
          continue;
        }
        this.owner = this.completesExchange(next.message) && !this.db.isInTransaction() ? null : next.handlerId;
        next.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
  }

  /** Startup packets carry no type byte (their first byte is the length's high byte, 0). */
  private completesExchange(message: Uint8Array): boolean {
    const type = message[0];
    return type === SYNC || type === QUERY || type === TERMINATE || type === 0;
  }
}

/** Where pg looks for a server's unix socket: `<host>/.s.PGSQL.<port>`, port 5432 by default. */
const SOCKET_NAME = ".s.PGSQL.5432";
/** sun_path holds 104 bytes on macOS, 108 on Linux, the terminating NUL included. */
const MAX_SOCKET_PATH = 100;

/**
 * `dataDir` undefined keeps the database in memory (tests). The caller holds DATA_DIR's lock
 * (data-dir-lock.ts): one engine per data directory.
 */
export async function startEmbeddedPostgres(dataDir: string | undefined, logger?: Logger): Promise<EmbeddedPostgres> {
  let db: PGlite;
  const dir = dataDir ? join(dataDir, "pgdata") : undefined;
  const fresh = !dir || !existsSync(join(dir, "PG_VERSION"));
  // A new database starts from the initial files `npm ci` made (embedded-template.ts), not initdb.
  const loadDataDir = fresh ? initialFiles() : undefined;
  const where = dir ?? "memory";
  if (!fresh) logger?.info({ data_dir: dataDir }, `embedded PostgreSQL: opening ${where}`);
  else if (loadDataDir) logger?.info({ data_dir: dataDir }, `embedded PostgreSQL: first start, copying its initial files into ${where}`);
  else logger?.info({ data_dir: dataDir }, `embedded PostgreSQL: first start, running initdb in ${where} (10-20 s; \`npm ci\` prepares these files once)`);
  if (dir) {
    ownerOnlyUmask();
    ensurePrivateDir(dir);
    db = await PGlite.create(dir, loadDataDir ? { loadDataDir } : {});
    restrictTree(dir);
  } else {
    db = await PGlite.create(loadDataDir ? { loadDataDir } : {});
  }
  const queue = new SessionQueue(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const server: Server = createServer((socket: Socket) => {
    if (handlers.size >= EMBEDDED_MAX_CONNECTIONS) {
      socket.end();
      return;
    }
    const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener("close", forget);
    handler.addEventListener("error", forget);
    handler.attach(socket).catch(() => {
      forget();
      socket.destroy();
    });
  });
  // The server trusts every client (no password), so only its own user may reach it: a unix socket
  // inside DATA_DIR (mode 700) when there is one and its path fits, else loopback TCP.
  const socketDir = dataDir && Buffer.byteLength(join(dataDir, SOCKET_NAME)) <= MAX_SOCKET_PATH ? dataDir : undefined;
  // A socket file left by a killed owner would refuse the bind; the DATA_DIR lock says it is stale.
  if (socketDir) rmSync(join(socketDir, SOCKET_NAME), { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (socketDir) server.listen(join(socketDir, SOCKET_NAME), resolve);
    else server.listen(0, "127.0.0.1", resolve);
  });
  const url = socketDir
    ? `postgres://postgres@localhost/postgres?host=${encodeURIComponent(socketDir)}`
    : `postgres://postgres@127.0.0.1:${(server.address() as { port: number }).port}/postgres`;
  return {
    url,
    async stop() {
      for (const h of handlers) await h.detach(true);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await db.close();
    },
  };
}
