// A Baileys connection's life through the stand-in socket: a logout from the phone, lost
// connections and their reconnect backoff, suspend and resume, delete, number checks, metrics,
// and the media fetch's limits.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Client } from "./support/actors.js";
import { standIn } from "./support/baileys-stand-in.js";
import { liveSocket, pairBaileys } from "./support/baileys.js";
import { uniquePhone, waitForConnection } from "./support/sandbox.js";
import { sleep, waitFor } from "./support/wait.js";
import { NUMBER_CHECK_GAP_MS } from "../server/engines/baileys/number-checks.js";
import { CHECK_TIMEOUT_MS, reconnectDelay, RECONNECT_BASE_MS, RECONNECT_MAX_MS } from "../server/engines/baileys/session.js";
import { fetchMedia } from "../server/engines/baileys/media.js";
import { parseAllowList } from "../server/outbound/address-policy.js";
import { EngineError } from "../server/engines/engine.js";
import { loadAuthState, wipeSession } from "../server/engines/baileys/auth-state.js";
import { librarySocketFactory } from "../server/engines/baileys/socket.js";

const slugOf = (p: string) => `${p}-${randomBytes(3).toString("hex")}`;
const db = () => testEnv().gateway.ctx.db;
const authCount = async (id: string) => ((await db().query(`SELECT count(*)::int AS n FROM baileys_auth WHERE connection_id = $1`, [id])) as { n: number }[])[0]!.n;

describe("Baileys connection life (stand-in socket)", function () {
  this.timeout(60_000);
  let client: Client;

  before(async () => {
    const ws = await newWorkspace();
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
  });
  afterEach(() => {
    standIn.world.hangChecks = false;
    standIn.world.offNetwork.clear();
  });

  it("a logout on the phone disconnects the connection, wipes its auth state and does not reconnect", async () => {
    const slug = slugOf("bly-logout");
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    expect(await authCount(connection.id)).to.be.greaterThan(0);
    const socket = await liveSocket(connection.id, (s) => s.user !== undefined);
    const opened = standIn.socketsOf(connection.id).length;
    socket.close(401);
    await waitForConnection(client, slug, (c) => c.state === "disconnected");
    await waitFor(() => authCount(connection.id), (n) => n === 0);
    await sleep(2 * RECONNECT_BASE_MS);
    expect(standIn.socketsOf(connection.id)).to.have.length(opened);
  });

  it("reconnects after a lost connection, with exponential backoff and jitter", async () => {
    const slug = slugOf("bly-lost");
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    const socket = await liveSocket(connection.id, (s) => s.user !== undefined);
    const started = Date.now();
    socket.close(428);
    const next = await liveSocket(connection.id, (s) => s !== socket && s.user !== undefined);
    expect(Date.now() - started).to.be.within(RECONNECT_BASE_MS * 0.5 - 50, RECONNECT_BASE_MS * 1.5 + 1_000);
    expect(next.qrs).to.have.length(0);
    expect((await expectOk(client.connections.get({ params: { connection: slug } }))).state).to.equal("connected");
    // The schedule itself: doubling from 1 s, capped at 60 s, times a jitter in [0.5, 1.5).
    expect(reconnectDelay(0, () => 0)).to.equal(RECONNECT_BASE_MS * 0.5);
    expect(reconnectDelay(3, () => 0.5)).to.equal(8 * RECONNECT_BASE_MS);
    expect(reconnectDelay(20, () => 0.999)).to.be.below(RECONNECT_MAX_MS * 1.5).and.above(RECONNECT_MAX_MS * 1.49);
  });

  it("suspend closes the socket and resume reopens it; delete unlinks the device and wipes the session", async () => {
    const slug = slugOf("bly-suspend");
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    const socket = await liveSocket(connection.id, (s) => s.user !== undefined);
    await expectOk(client.connections.suspend({ params: { connection: slug } }));
    expect(socket.calls.map((c) => c.method)).to.include("end");
    expect(standIn.live(connection.id)).to.equal(undefined);
    await expectOk(client.connections.resume({ params: { connection: slug } }));
    const resumed = await liveSocket(connection.id, (s) => s.user !== undefined);
    expect(resumed.qrs).to.have.length(0);

    expect((await client.connections.delete({ params: { connection: slug } })).status).to.equal(204);
    expect(resumed.calls.map((c) => c.method)).to.include("logout");
    expect(await authCount(connection.id)).to.equal(0);
    expect(standIn.live(connection.id)).to.equal(undefined);
  });

  it("checks numbers through the network, and answers checked: false when it does not answer in time", async () => {
    const slug = slugOf("bly-check");
    await pairBaileys(client, slug, uniquePhone("+1558"));
    const on = uniquePhone("+1559");
    const off = uniquePhone("+1559");
    standIn.world.offNetwork.add(`${off.slice(1)}@s.whatsapp.net`);
    expect(await expectOk(client.messages.checkNumber({ query: { connection: slug, phone: on } }))).to.deep.include({ checked: true, on_network: true });
    expect(await expectOk(client.messages.checkNumber({ query: { connection: slug, phone: off } }))).to.deep.include({ checked: true, on_network: false });
    standIn.world.hangChecks = true;
    const started = Date.now();
    // A number not checked before (the two above are remembered).
    expect(await expectOk(client.messages.checkNumber({ query: { connection: slug, phone: uniquePhone("+1559") } }))).to.deep.include({ checked: false, on_network: null });
    expect(Date.now() - started).to.be.at.least(CHECK_TIMEOUT_MS - 100);
  });

  it("remembers a number check a day, and asks the network at most once a second", async () => {
    const slug = slugOf("bly-check-cache");
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    const socket = await liveSocket(connection.id);
    const lookups = () => socket.calls.filter((c) => c.method === "onWhatsApp").length;
    const phone = uniquePhone("+1559");
    const check = (p: string) => expectOk(client.messages.checkNumber({ query: { connection: slug, phone: p } }));
    expect(await check(phone)).to.deep.include({ checked: true, on_network: true });
    expect(await check(phone)).to.deep.include({ checked: true, on_network: true });
    expect(lookups(), "the second answer came from the cache").to.equal(1);
    // A day later the network is asked again.
    await testEnv().gateway.ctx.db.query(`UPDATE baileys_number_checks SET checked_at = now() - interval '24 hours 1 second' WHERE connection_id = $1`, [connection.id]);
    expect(await check(phone)).to.deep.include({ checked: true, on_network: true });
    expect(lookups()).to.equal(2);
    // Three new numbers at once: the lookups take turns, at least NUMBER_CHECK_GAP_MS apart.
    const started = Date.now();
    const answers = await Promise.all([uniquePhone("+1559"), uniquePhone("+1559"), uniquePhone("+1559")].map(check));
    expect(answers.every((a) => a.checked)).to.equal(true);
    expect(lookups()).to.equal(5);
    expect(Date.now() - started).to.be.at.least(2 * NUMBER_CHECK_GAP_MS - 50);
  });

  it("exposes engine metrics by engine name only", async () => {
    const slug = slugOf("bly-metrics");
    const { connection } = await pairBaileys(client, slug, uniquePhone("+1558"));
    const sent = await expectOk(client.messages.send({ body: { connection: slug, to: uniquePhone("+1559"), body: "counted" } }));
    await waitFor(() => expectOk(client.messages.get({ params: { id: sent.id } })), (m) => m.status === "submitted");
    const res = await http("GET", "/metrics", { headers: { authorization: `Bearer ${testEnv().gateway.ctx.config.metricsToken}` } });
    expect(res.status).to.equal(200);
    expect(res.text).to.match(/svc_engine_sends_total\{engine="baileys",outcome="written"\} [1-9]/);
    expect(res.text).to.match(/svc_connections\{engine="baileys",state="connected"\} [1-9]/);
    expect(res.text).to.match(/svc_engine_reconnects_total\{engine="baileys"\} [1-9]/);
    for (const line of res.text.split("\n").filter((l) => /^svc_(engine|connections)/.test(l))) {
      expect(line).to.not.contain(connection.id);
      expect(line).to.not.match(/workspace|connection=|session|phone|\+1558/);
    }
  });
});

describe("Baileys media fetch limits", () => {
  let server: Server;
  let base: string;
  const policy = { allowPrivate: parseAllowList(["127.0.0.0/8"]) };

  before(async () => {
    server = createServer((req, res) => {
      const size = Number(new URL(req.url!, "http://x").searchParams.get("size"));
      if (req.url!.startsWith("/slow")) return void setTimeout(() => res.end("late"), 2_000);
      res.writeHead(200, { "content-type": "application/pdf" }).end(Buffer.alloc(size, 1));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as EngineError);

  it("takes a file of exactly the size limit and refuses one byte more", async () => {
    const ok = await fetchMedia({ url: `${base}/f?size=1000` }, policy, { maxBytes: 1000 });
    expect(ok.data.length).to.equal(1000);
    expect(ok.mimetype).to.equal("application/pdf");
    const big = await failure(fetchMedia({ url: `${base}/f?size=1001` }, policy, { maxBytes: 1000 }));
    expect(big).to.be.instanceOf(EngineError);
    expect(big).to.include({ code: "media_too_large", permanent: true });
  });

  it("fails a fetch that outlasts its timeout, and refuses an address outside the policy", async () => {
    const slow = await failure(fetchMedia({ url: `${base}/slow` }, policy, { timeoutMs: 300 }));
    expect(slow).to.include({ code: "media_fetch_failed" });
    const refused = await failure(fetchMedia({ url: `${base}/f?size=1` }, { allowPrivate: parseAllowList([]) }));
    expect(refused).to.include({ code: "media_url_refused" });
  });
});

describe("Baileys auth state in PostgreSQL", () => {
  it("writes, reads and deletes signal keys, sealed, and wipes them with the session", async () => {
    const id = `con_authtest_${randomBytes(4).toString("hex")}`;
    const secret = testEnv().gateway.ctx.config.secretKey;
    const first = await loadAuthState(db(), secret, id);
    expect(first.restored).to.equal(false);
    await first.saveCreds();
    const session = Buffer.from("session-bytes-0123456789");
    await first.state.keys.set({ session: { "a.0": session, "b.0": Buffer.from("other") }, "pre-key": { "7": { public: Buffer.from([1]), private: Buffer.from([2]) } } });
    const raw = (await db().query(`SELECT value_sealed FROM baileys_auth WHERE connection_id = $1`, [id])) as { value_sealed: string }[];
    expect(raw).to.have.length(4);
    for (const r of raw) expect(r.value_sealed).to.not.contain("session-bytes");

    const again = await loadAuthState(db(), secret, id);
    expect(again.restored).to.equal(true);
    expect(again.state.creds.noiseKey.public).to.deep.equal(first.state.creds.noiseKey.public);
    const got = await again.state.keys.get("session", ["a.0", "missing"]);
    expect(Buffer.from(got["a.0"]!).toString()).to.equal("session-bytes-0123456789");
    expect(got).to.not.have.property("missing");
    // A null value deletes the key, in the same update as the others.
    await again.state.keys.set({ session: { "a.0": null, "c.0": Buffer.from("new") } });
    expect(Object.keys(await again.state.keys.get("session", ["a.0", "b.0", "c.0"])).sort()).to.deep.equal(["b.0", "c.0"]);

    await wipeSession(db(), id);
    expect(await authCount(id)).to.equal(0);
    expect((await loadAuthState(db(), secret, id)).restored).to.equal(false);
  });
});

describe("the library's own socket", () => {
  it("takes our auth state and options, and reports a network it cannot reach as a close to retry", async () => {
    const id = `con_libtest_${randomBytes(4).toString("hex")}`;
    const auth = await loadAuthState(db(), testEnv().gateway.ctx.config.secretKey, id);
    const socket = await librarySocketFactory({ connectionId: id, auth: auth.state, getMessage: async () => undefined, cachedGroupMetadata: async () => undefined, logger: testEnv().gateway.ctx.logger });
    try {
      // The test machines cannot reach the network: the library says so with a close (408), which
      // the session retries with backoff. With network access the first QR would come instead.
      const update = await new Promise<{ qr?: string; code?: number }>((resolve) =>
        socket.ev.on("connection.update", (u) => {
          if (u.qr) resolve({ qr: u.qr });
          else if (u.connection === "close") resolve({ code: (u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode });
        }),
      );
      if (update.qr === undefined) expect(update.code).to.equal(408);
    } finally {
      await Promise.resolve(socket.end(undefined)).catch(() => undefined);
      await wipeSession(db(), id);
    }
  });
});
