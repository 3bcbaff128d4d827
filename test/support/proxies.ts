// Loopback proxies a test controls, to prove a socket really goes through one: a SOCKS5 server
// (no authentication, or username/password) and an HTTP CONNECT proxy. Each records the target
// every client asked for and the credentials it presented, then carries the bytes both ways.
import { createHash } from "node:crypto";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";

export interface LoopbackProxy {
  /** The proxy's URL, e.g. socks5://user:pass@127.0.0.1:40123. */
  url: string;
  /** `host:port` of every tunnel a client asked for, in order. */
  targets: string[];
  /** The credentials each client presented (`user:password`), or null. */
  credentials: (string | null)[];
  close(): Promise<void>;
}

/** Reads a socket's bytes on demand until the handshake is done; then hands the rest over. */
function reader(socket: Socket) {
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | null = null;
  const onData = (d: Buffer) => {
    buffered = Buffer.concat([buffered, d]);
    wake?.();
  };
  socket.on("data", onData);
  return {
    async take(n: number): Promise<Buffer> {
      while (buffered.length < n) await new Promise<void>((r) => (wake = r));
      const out = buffered.subarray(0, n);
      buffered = buffered.subarray(n);
      return out;
    },
    /** Stops reading; answers what was read past the handshake. */
    release(): Buffer {
      socket.off("data", onData);
      return buffered;
    },
  };
}

function tunnel(client: Socket, host: string, port: number, early: Buffer, ready: () => void): void {
  const upstream = connect(port, host, () => {
    ready();
    if (early.length) upstream.write(early);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on("error", () => client.destroy());
  client.on("error", () => upstream.destroy());
}

async function listen(server: Server | HttpServer, sockets: Set<Socket>): Promise<number> {
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as { port: number }).port;
}

function closer(server: Server | HttpServer, sockets: Set<Socket>): () => Promise<void> {
  return async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
}

/** A SOCKS5 proxy (RFC 1928, CONNECT only; RFC 1929 username/password when the client offers it). */
export async function startSocksProxy(auth?: { user: string; password: string }): Promise<LoopbackProxy> {
  const targets: string[] = [];
  const credentials: (string | null)[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    void (async () => {
      const r = reader(client);
      const [, nMethods] = await r.take(2);
      const methods = [...(await r.take(nMethods!))];
      if (auth && methods.includes(2)) {
        client.write(Buffer.from([5, 2]));
        const [, userLength] = await r.take(2);
        const user = (await r.take(userLength!)).toString();
        const [passwordLength] = await r.take(1);
        const password = (await r.take(passwordLength!)).toString();
        credentials.push(`${user}:${password}`);
        const ok = user === auth.user && password === auth.password;
        client.write(Buffer.from([1, ok ? 0 : 1]));
        if (!ok) return client.destroy();
      } else if (!auth && methods.includes(0)) {
        client.write(Buffer.from([5, 0]));
        credentials.push(null);
      } else {
        client.end(Buffer.from([5, 0xff]));
        return;
      }
      const [, command, , type] = await r.take(4);
      const host =
        type === 1 ? [...(await r.take(4))].join(".") : type === 3 ? (await r.take((await r.take(1))[0]!)).toString() : (await r.take(16)).toString("hex").replace(/(.{4})(?!$)/g, "$1:");
      const port = (await r.take(2)).readUInt16BE(0);
      targets.push(`${host}:${port}`);
      if (command !== 1) return client.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
      tunnel(client, host, port, r.release(), () => client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0])));
    })().catch(() => client.destroy());
  });
  const port = await listen(server, sockets);
  const userinfo = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@` : "";
  return { url: `socks5://${userinfo}127.0.0.1:${port}`, targets, credentials, close: closer(server, sockets) };
}

/** An HTTP proxy that tunnels CONNECT requests (what an https-proxy agent asks of it). */
export async function startConnectProxy(): Promise<LoopbackProxy> {
  const targets: string[] = [];
  const credentials: (string | null)[] = [];
  const sockets = new Set<Socket>();
  const server = createHttpServer((_req, res) => res.writeHead(405).end());
  server.on("connect", (req, client: Socket, head: Buffer) => {
    targets.push(req.url ?? "");
    const basic = /^Basic (.+)$/.exec(req.headers["proxy-authorization"] ?? "");
    credentials.push(basic ? Buffer.from(basic[1]!, "base64").toString() : null);
    const [host, port] = (req.url ?? "").split(":");
    tunnel(client, host!, Number(port), head, () => client.write("HTTP/1.1 200 Connection Established\r\n\r\n"));
  });
  const port = await listen(server, sockets);
  return { url: `http://127.0.0.1:${port}`, targets, credentials, close: closer(server, sockets) };
}

/**
 * A loopback stand-in for the network's WebSocket endpoint: it accepts the upgrade and keeps the
 * first frame each client sends (the library's opening of its Noise handshake), unmasked.
 */
export async function startWebSocketStandIn(): Promise<{ url: string; upgrades: { path: string; firstFrame: Promise<Buffer> }[]; close(): Promise<void> }> {
  const upgrades: { path: string; firstFrame: Promise<Buffer> }[] = [];
  const sockets = new Set<Socket>();
  const server = createHttpServer((_req, res) => res.writeHead(426).end());
  server.on("upgrade", (req, socket: Socket) => {
    const accept = createHash("sha1").update(`${req.headers["sec-websocket-key"]}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    const r = reader(socket);
    const firstFrame = (async () => {
      const [, second] = await r.take(2);
      let length = second! & 0x7f;
      if (length === 126) length = (await r.take(2)).readUInt16BE(0);
      else if (length === 127) length = Number((await r.take(8)).readBigUInt64BE(0));
      const mask = await r.take(4);
      const payload = Buffer.from(await r.take(length));
      for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
      return payload;
    })();
    upgrades.push({ path: req.url ?? "", firstFrame });
  });
  const port = await listen(server, sockets);
  return { url: `ws://127.0.0.1:${port}/ws/chat`, upgrades, close: closer(server, sockets) };
}
