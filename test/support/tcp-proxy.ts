// A TCP proxy a test controls, to take a dependency away for real: cut() closes the listening
// socket and destroys every connection through it (the peer sees a reset, new connections are
// refused, as when a database server or its host goes down); restore() listens again on the
// same port, as when it comes back. loseAnswerTo() cuts one connection at the worst moment for a
// write: its statement reaches the server and completes there, and its answer never arrives.
// holdAnswerTo() keeps that answer back instead, until the test lets it through. stall() makes
// the dependency stop answering without closing anything, as a host that has gone silent: bytes
// are dropped both ways and no connection is ended, not even one its client ends.
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  /** Armed by loseAnswerTo: the statement whose answer the next connection sending it loses. */
  private trap: { marker: Buffer; sprung: () => void; hold: Promise<void> | null } | null = null;
  /** Set by stall(): nothing is forwarded and nothing closed. */
  private stalled = false;
  /** The port the proxy listens on; fixed at the first listen so clients keep their URL. */
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy in front of the host and port of `url`; returns it listening. */
  static async inFrontOf(url: string): Promise<TcpProxy> {
    const u = new URL(url);
    const proxy = new TcpProxy(u.hostname, Number(u.port || 5432));
    await proxy.restore();
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  get up(): boolean {
    return this.server !== null;
  }

  async restore(): Promise<void> {
    if (this.server) return;
    this.stalled = false;
    // Half-open allowed: a client's end is forwarded by hand, so that a stalled proxy can hold it.
    const server = createServer({ allowHalfOpen: true }, (client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      client.on("end", () => {
        if (!this.stalled) upstream.end();
      });
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on("error", drop).on("close", drop);
      upstream.on("error", drop).on("close", drop);
      // PostgreSQL's wire protocol, watched for the armed trap: once this connection sends the
      // marked statement, the server's messages are read (each a type byte and a length that
      // counts itself) and kept from the client up to ReadyForQuery ('Z'), by which the statement
      // has completed and, outside a transaction, committed; then the connection is reset.
      let tail = Buffer.alloc(0);
      let held: Buffer | null = null;
      client.on("data", (chunk: Buffer) => {
        if (this.stalled) return;
        const trap = this.trap;
        if (trap && held === null) {
          const seen = Buffer.concat([tail, chunk]);
          if (seen.includes(trap.marker)) {
            this.trap = null;
            held = Buffer.alloc(0);
            const scan = () => {
              for (let at = 0; held!.length - at >= 5; ) {
                const end = at + 1 + held!.readUInt32BE(at + 1);
                if (end > held!.length) break;
                if (held![at] === 0x5a) {
                  upstream.off("data", scan);
                  trap.sprung();
                  if (trap.hold) {
                    // Let through, with whatever followed it, once released.
                    void trap.hold.then(() => {
                      if (held) client.write(held);
                      held = null;
                    });
                  } else {
                    client.resetAndDestroy();
                    drop();
                  }
                  return;
                }
                at = end;
              }
            };
            upstream.on("data", scan);
          }
          tail = seen.subarray(Math.max(0, seen.length - trap.marker.length));
        }
        upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (this.stalled) return;
        if (held === null) client.write(chunk);
        else held = Buffer.concat([held, chunk]);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /**
   * Arms a trap for the next statement whose messages carry `marker` (a prepared statement's name,
   * or text of its SQL): it reaches the server and runs, and its connection is reset once the
   * server has answered, the answer withheld. Resolves when that has happened.
   */
  loseAnswerTo(marker: string): Promise<void> {
    return new Promise((resolve) => {
      this.trap = { marker: Buffer.from(marker), sprung: resolve, hold: null };
    });
  }

  /**
   * Like loseAnswerTo, but the answer is kept back, not lost: `answered` resolves once the
   * statement has completed on the server, and the client reads its answer after `release()`.
   */
  holdAnswerTo(marker: string): { answered: Promise<void>; release: () => void } {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const answered = new Promise<void>((resolve) => {
      this.trap = { marker: Buffer.from(marker), sprung: resolve, hold };
    });
    return { answered, release };
  }

  /** Refuses new connections and resets every open one. */
  async cut(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
    await closed;
  }

  /** Stops answering: every byte either way is dropped from now on, and no connection is closed. */
  stall(): void {
    this.stalled = true;
  }
}
