// Embedded PostgreSQL for development and tests without a server: PGlite (PostgreSQL compiled to
// WebAssembly) behind a socket, so the ordinary `pg` driver reaches it like any server.
//
// PGlite is one backend session. Many client connections share it, so their protocol messages
// must not interleave: pglite-socket's own queue keeps a client's messages together only inside a
// transaction, and outside one it mixes the Parse/Bind/Execute/Sync of concurrent extended-protocol
// queries ("bind message supplies 1 parameters, but prepared statement requires 11", wrong rows).
// `SessionQueue` below gives one client the backend from its first message until its exchange is
// complete (Sync or a simple Query answered outside a transaction), and serves the others after.
// Named prepared statements belong to the session too: `StatementNames` gives each client's names
// a prefix of its own on the way in, so that each client sees them as in a session of its own.
// So does LISTEN: `Notifications` takes each notification out of the answers of the client whose
// exchange committed it and writes it to the clients that listen on its channel.
import { existsSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketHandler } from "@electric-sql/pglite-socket";
import { ensurePrivateDir, ownerOnlyUmask, restrictTree } from "../data-dir.js";
import type { Logger } from "../logger.js";
import { initialFiles } from "./embedded-template.js";

/**
 * Connections are multiplexed onto one backend and cheap. A process opens up to 13 (its pool's 8,
 * Agenda's 4, its LISTEN connection): headroom lets a few other processes share it.
 */
export const EMBEDDED_MAX_CONNECTIONS = 64;

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
const PARSE = 0x50; // 'P'
const BIND = 0x42; // 'B'
const DESCRIBE = 0x44; // 'D'
const CLOSE = 0x43; // 'C'
const STATEMENT = 0x53; // 'S', what a Describe or Close names (else 'P', a portal)

const NOTIFICATION = 0x41; // 'A', in the backend's answers

/** The offset just past the NUL that ends the C string at `from`. */
function endOfString(message: Uint8Array, from: number): number {
  const nul = message.indexOf(0, from);
  if (nul < 0) throw new Error("malformed protocol message: unterminated string");
  return nul + 1;
}

/** A simple Query message. */
function queryMessage(sql: string): Uint8Array {
  const text = Buffer.from(`${sql}\0`, "utf8");
  const message = Buffer.alloc(5 + text.length);
  message[0] = QUERY;
  message.writeInt32BE(4 + text.length, 1);
  text.copy(message, 5);
  return message;
}

/**
 * A prepared statement's name is the session's, and every client shares this one: two clients
 * preparing one name would collide ("prepared statement already exists") and one client's Close
 * would drop another's statement. Each client's statement names get the prefix `c<client>.` in
 * its Parse, Bind, Describe and Close messages, and what a client prepared is dropped when it goes.
 */
export class StatementNames {
  private readonly prepared = new Map<number, Set<string>>();

  /** The message with its statement name, if it names one, made the client's own. */
  rename(handlerId: number, message: Uint8Array): Uint8Array {
    let at: number;
    if (message[0] === PARSE) at = 5;
    else if (message[0] === BIND) at = endOfString(message, 5); // after the portal's name
    else if ((message[0] === DESCRIBE || message[0] === CLOSE) && message[5] === STATEMENT) at = 6;
    else return message;
    const end = endOfString(message, at);
    if (end - at === 1) return message; // the unnamed statement lives until the next Parse
    const name = `c${handlerId}.${Buffer.from(message.subarray(at, end - 1)).toString("utf8")}`;
    if (message[0] === PARSE) this.namesOf(handlerId).add(name);
    else if (message[0] === CLOSE) this.prepared.get(handlerId)?.delete(name);
    const renamed = Buffer.concat([message.subarray(0, at), Buffer.from(name, "utf8"), message.subarray(end - 1)]);
    renamed.writeInt32BE(renamed.length - 1, 1);
    return renamed;
  }

  /** The session's names of what the client prepared, forgotten. */
  forget(handlerId: number): string[] {
    const names = [...(this.prepared.get(handlerId) ?? [])];
    this.prepared.delete(handlerId);
    return names;
  }

  private namesOf(handlerId: number): Set<string> {
    let names = this.prepared.get(handlerId);
    if (!names) this.prepared.set(handlerId, (names = new Set()));
    return names;
  }
}

/** A channel as LISTEN names it: a quoted identifier keeps its case, an unquoted one is folded. */
function channelOf(identifier: string): string {
  return identifier.startsWith('"') ? identifier.slice(1, -1).replaceAll('""', '"') : identifier.toLowerCase();
}

const LISTEN_COMMAND = /^\s*(LISTEN|UNLISTEN)\s+("(?:[^"]|"")+"|[^\s;"]+)\s*;?\s*$/i;

/**
 * LISTEN in the shared session. The session listens on a channel once any client has asked, and
 * PostgreSQL hands each notification to the session's one client: here, whichever client's
 * exchange committed it. It is taken out of that client's answers and written to every client
 * listening on its channel. A client's UNLISTEN runs only when no other client still listens on
 * the channel; a client that goes stops listening, and the session keeps listening for the next.
 */
export class Notifications {
  /** Per channel, the clients listening on it and how to write to each. */
  private readonly listeners = new Map<string, Map<number, (data: Uint8Array) => void>>();
  /** The channels the session listens on. */
  private readonly session = new Set<string>();

  /** A client's message, its LISTEN or UNLISTEN recorded; what to run instead. */
  observe(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Uint8Array {
    if (message[0] !== QUERY) return message;
    // Only a query that starts with L or U is read as text: every other passes as it came.
    let first = 5;
    while (message[first] === 0x20 || (message[first]! >= 0x09 && message[first]! <= 0x0d)) first++;
    const letter = message[first]! | 0x20;
    if (letter !== 0x6c && letter !== 0x75) return message;
    const command = LISTEN_COMMAND.exec(Buffer.from(message.subarray(5, message.length - 1)).toString("utf8"));
    if (!command) return message;
    const channel = command[2] === "*" ? "*" : channelOf(command[2]!);
    if (command[1]!.toUpperCase() === "LISTEN") {
      let clients = this.listeners.get(channel);
      if (!clients) this.listeners.set(channel, (clients = new Map()));
      clients.set(handlerId, onData);
      this.session.add(channel);
      return message;
    }
    const channels = channel === "*" ? [...this.listeners.keys()] : [channel];
    for (const c of channels) this.stop(handlerId, c);
    // Another client still listens: the session goes on listening, and the client gets an empty answer.
    if (channels.some((c) => this.listeners.has(c))) return queryMessage("");
    for (const c of channels) this.session.delete(c);
    if (channel === "*") this.session.clear();
    return message;
  }

  /** Whether answers may hold notifications. */
  get active(): boolean {
    return this.session.size > 0;
  }

  /** `answers` (whole protocol messages) without their notifications, each written to its channel's clients. */
  route(answers: Buffer): Buffer {
    const kept: Buffer[] = [];
    let from = 0;
    for (let at = 0; at + 5 <= answers.length; ) {
      const end = at + 1 + answers.readInt32BE(at + 1);
      if (answers[at] === NOTIFICATION) {
        kept.push(answers.subarray(from, at));
        from = end;
        const notification = answers.subarray(at, end);
        const channel = notification.subarray(9, endOfString(notification, 9) - 1).toString("utf8");
        for (const write of this.listeners.get(channel)?.values() ?? []) write(notification);
      }
      at = end;
    }
    if (from === 0) return answers;
    kept.push(answers.subarray(from));
    return Buffer.concat(kept);
  }

  /** The client is gone. */
  forget(handlerId: number): void {
    for (const channel of [...this.listeners.keys()]) this.stop(handlerId, channel);
  }

  private stop(handlerId: number, channel: string): void {
    const clients = this.listeners.get(channel);
    clients?.delete(handlerId);
    if (clients?.size === 0) this.listeners.delete(channel);
  }
}

/** A queue with the interface PGLiteSocketHandler expects, holding the backend per exchange. */
class SessionQueue {
  private readonly queue: Pending[] = [];
  private owner: number | null = null;
  private processing = false;
  private readonly statements = new StatementNames();
  private readonly notifications = new Notifications();

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const renamed = this.notifications.observe(handlerId, this.statements.rename(handlerId, message), onData);
      this.queue.push({ handlerId, message: renamed, onData, resolve, reject });
      void this.process();
    });
  }

  clearQueueForHandler(handlerId: number): void {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i]!.handlerId === handlerId) this.queue.splice(i, 1)[0]!.reject(new Error("Handler disconnected"));
    }
  }

  /** Called as a client goes, after clearQueueForHandler: its transaction rolled back, its statements dropped. */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner === handlerId) {
      if (this.db.isInTransaction()) await this.db.exec("ROLLBACK");
      this.owner = null;
    }
    this.notifications.forget(handlerId);
    // Queued behind what other clients have begun; nobody reads the answers.
    for (const name of this.statements.forget(handlerId)) {
      this.enqueue(handlerId, queryMessage(`DEALLOCATE "${name.replaceAll('"', '""')}"`), () => {}).catch(() => {});
    }
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
        // While the session listens, a message's answers are held whole, for their notifications.
        const held: Buffer[] | null = this.notifications.active ? [] : null;
        const answer = () => {
          if (!held?.length) return;
          const answers = this.notifications.route(held.length === 1 ? held[0]! : Buffer.concat(held));
          if (answers.length > 0) next.onData(answers);
        };
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(next.message, {
              onRawData: (data: Uint8Array) => {
                bytes += data.length;
                if (held) held.push(Buffer.from(data)); // PGlite reuses the memory it hands out
                else next.onData(data);
              },
            }),
          );
        } catch (err) {
          answer();
          this.owner = null;
          next.reject(err);
          continue;
        }
        answer();
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
