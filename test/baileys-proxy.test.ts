// A proxy per connection (docs/engines.md, "A proxy per connection"): the engine's own
// socket code (the library's makeWASocket, as production makes it) goes through a loopback SOCKS5
// and an HTTP CONNECT proxy to a loopback stand-in of the network's WebSocket endpoint; the
// proxies must actually carry the bytes (the stand-in receives the library's handshake through
// them). Then the route that sets a connection's proxy, and the session that uses it.
import { initAuthCreds } from "@whiskeysockets/baileys";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { maskProxyUrl } from "../server/engines/baileys/proxy.js";
import { librarySocketFactory, type EngineSocket } from "../server/engines/baileys/socket.js";
import { createLogger } from "../server/logger.js";
import { testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { standIn } from "./support/baileys-stand-in.js";
import { createBaileysConnection, liveSocket } from "./support/baileys.js";
import { waitForConnection } from "./support/sandbox.js";
import { startConnectProxy, startSocksProxy, startWebSocketStandIn, type LoopbackProxy } from "./support/proxies.js";
import { waitFor } from "./support/wait.js";

/** The library's socket as the engine makes it, to `webSocketUrl` through `proxyUrl`. */
function librarySocket(proxyUrl: string | undefined, webSocketUrl: string): Promise<EngineSocket> {
  return Promise.resolve(librarySocketFactory({
    connectionId: "con_proxy_test",
    auth: { creds: initAuthCreds(), keys: { get: async () => ({}), set: async () => undefined } },
    getMessage: async () => undefined,
    cachedGroupMetadata: async () => undefined,
    logger: createLogger("fatal"),
    proxyUrl,
    webSocketUrl,
  }));
}

describe("Baileys engine: a proxy per connection", function () {
  this.timeout(30_000);

  describe("the library's socket through a loopback proxy", () => {
    const opened: { close(): Promise<void> }[] = [];
    const sockets: EngineSocket[] = [];
    afterEach(async () => {
      // Not awaited: the library waits for a close handshake the stand-in never answers; closing
      // the servers below ends the socket.
      for (const s of sockets.splice(0)) void Promise.resolve(s.end(undefined)).catch(() => undefined);
      for (const o of opened.splice(0)) await o.close();
    });

    async function handshakeThrough(proxy: LoopbackProxy | null): Promise<{ server: Awaited<ReturnType<typeof startWebSocketStandIn>>; first: Buffer }> {
      const server = await startWebSocketStandIn();
      opened.push(server);
      sockets.push(await librarySocket(proxy?.url, server.url));
      const [upgrade] = await waitFor(async () => server.upgrades, (u) => u.length > 0, 10_000);
      expect(upgrade!.path).to.equal("/ws/chat");
      return { server, first: await upgrade!.firstFrame };
    }

    it("goes through a SOCKS5 proxy, with its username and password, and the handshake reaches the server", async () => {
      const proxy = await startSocksProxy({ user: "gw", password: "s3cret" });
      opened.push(proxy);
      const { server, first } = await handshakeThrough(proxy);
      expect(proxy.targets).to.deep.equal([new URL(server.url).host]);
      expect(proxy.credentials).to.deep.equal(["gw:s3cret"]);
      // The library's Noise handshake opens with the protocol's "WA" header: the proxy carried it.
      expect(first.subarray(0, 2).toString()).to.equal("WA");
    });

    it("goes through an HTTP CONNECT proxy, and the handshake reaches the server", async () => {
      const proxy = await startConnectProxy();
      opened.push(proxy);
      const { server, first } = await handshakeThrough(proxy);
      expect(proxy.targets).to.deep.equal([new URL(server.url).host]);
      expect(first.subarray(0, 2).toString()).to.equal("WA");
    });

    it("connects directly when no proxy is set (the proxies see nothing)", async () => {
      const proxy = await startSocksProxy();
      opened.push(proxy);
      const { first } = await handshakeThrough(null);
      expect(first.subarray(0, 2).toString()).to.equal("WA");
      expect(proxy.targets).to.deep.equal([]);
    });
  });

  describe("PUT /v1/connections/{slug}/settings", () => {
    it("seals the proxy URL, answers it masked, and the connection's next socket goes through it", async () => {
      const ws = await newWorkspace();
      const { client } = await ws.key(["connections:read", "connections:write"]);
      const slug = `proxied-${Date.now().toString(36)}`;
      const created = await createBaileysConnection(client, slug);
      const url = "socks5://gw:pa%24%24word@127.0.0.1:1080";
      const res = await client.connections.settings({ params: { connection: slug }, body: { proxy_url: url } });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ proxy_url: "socks5://gw:****@127.0.0.1:1080" });
      expect(res.headers.get("cache-control")).to.equal("no-store");
      const [row] = (await testEnv().gateway.ctx.db.query(`SELECT proxy_url_sealed FROM connections WHERE id = $1`, [created.id])) as { proxy_url_sealed: string }[];
      expect(row!.proxy_url_sealed).to.match(/^v1\./).and.not.include("pa%24%24word").and.not.include("127.0.0.1");
      // Nothing else shows it: the connection's view has no proxy.
      expect(JSON.stringify(await expectOk(client.connections.get({ params: { connection: slug } })))).to.not.include("1080");
      await expectOk(client.connections.pair({ params: { connection: slug } }));
      const socket = await liveSocket(created.id);
      expect(socket.options.proxyUrl).to.equal(url);
      // null: back to the gateway's default (none in the tests), from the next socket on: the
      // pairing socket gives up unscanned, and the next pair opens another.
      expect((await expectOk(client.connections.settings({ params: { connection: slug }, body: { proxy_url: null } }))).proxy_url).to.equal(null);
      standIn.world.qrIntervalMs = 40;
      try {
        await waitForConnection(client, slug, (c) => c.state === "disconnected");
      } finally {
        standIn.world.qrIntervalMs = 1_000;
      }
      await expectOk(client.connections.pair({ params: { connection: slug } }));
      const next = await liveSocket(created.id, (s) => s !== socket);
      expect(next.options.proxyUrl).to.equal(undefined);
      expect(standIn.socketsOf(created.id).length).to.be.at.least(2);
    });

    it("refuses what is not a proxy URL with 400 and changes nothing; 404 for another workspace; needs connections:write", async () => {
      const ws = await newWorkspace();
      const { client } = await ws.key(["connections:read", "connections:write"]);
      await expectOk(client.connections.create({ body: { slug: "proxy-limits" } }));
      const put = (body: unknown) => client.connections.settings({ params: { connection: "proxy-limits" }, body: body as { proxy_url: null } });
      const longest = `http://${"a".repeat(2048 - "http://".length - ":1".length)}:1`;
      for (const body of [
        { proxy_url: "ftp://host:21" },
        { proxy_url: "not a url" },
        { proxy_url: "socks5://host:1080/path" },
        { proxy_url: "http://host:3128?x=1" },
        { proxy_url: "" },
        { proxy_url: `${longest}0` },
        {},
        { proxy_url: null, extra: true },
      ]) {
        const res = await put(body);
        expect(res.status, JSON.stringify(body).slice(0, 60)).to.equal(400);
      }
      const [row] = (await testEnv().gateway.ctx.db.query(`SELECT proxy_url_sealed FROM connections WHERE slug = 'proxy-limits' AND workspace_id = $1`, [ws.id])) as { proxy_url_sealed: string | null }[];
      expect(row!.proxy_url_sealed).to.equal(null);
      // The last valid length, and each scheme.
      expect(longest).to.have.length(2048);
      expect((await put({ proxy_url: longest })).status).to.equal(200);
      for (const scheme of ["socks5", "socks5h", "socks4", "http", "https"]) expect((await put({ proxy_url: `${scheme}://proxy.example:1080` })).status, scheme).to.equal(200);
      const other = await (await newWorkspace()).key(["connections:write"]);
      expect((await other.client.connections.settings({ params: { connection: "proxy-limits" }, body: { proxy_url: null } })).status).to.equal(404);
      const reader = await ws.key(["connections:read"]);
      expect((await reader.client.connections.settings({ params: { connection: "proxy-limits" }, body: { proxy_url: null } })).status).to.equal(403);
    });

    it("masks only the password", () => {
      expect(maskProxyUrl("http://user:pw@proxy.example:3128")).to.equal("http://user:****@proxy.example:3128");
      expect(maskProxyUrl("socks5://proxy.example:1080")).to.equal("socks5://proxy.example:1080");
    });
  });
});
