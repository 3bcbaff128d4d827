// A TCP proxy a test controls, to take a dependency away for real: cut() closes the listening
// socket and destroys every connection through it (the peer sees a reset, new connections are
// refused, as when a database server or its host goes down); restore() listens again on the
// same port, as when it comes back.
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
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
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on("error", drop).on("close", drop);
      upstream.on("error", drop).on("close", drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
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
}
