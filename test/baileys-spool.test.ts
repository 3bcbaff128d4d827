// The Baileys engine's report spool against a database that goes away for real (a TCP proxy the
// test cuts): reports the library acknowledged wait on disk and are applied once, whenever the
// database returns; a process that dies with reports on disk leaves them to the next process on
// the same data directory, which applies them once, also when the dead one had applied some.
import { randomBytes } from "node:crypto";
import { mkdtempSync, renameSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import type { DataSource } from "typeorm";
import type { ProviderEvent } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { createDataSource } from "../server/db/data-source.js";
import { ReportSpool } from "../server/engines/baileys/spool.js";
import type { Report } from "../server/engines/baileys/session.js";
import { createLogger } from "../server/logger.js";
import { ProviderCallbackService } from "../server/provider/service.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { uniquePhone } from "./support/sandbox.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { waitFor } from "./support/wait.js";

const logger = createLogger("silent");

describe("Baileys report spool (the database away for real)", function () {
  this.timeout(60_000);
  let proxy: TcpProxy;
  let db: DataSource;
  let service: ProviderCallbackService;
  let client: Client;
  let connection: { id: string; slug: string; token: string };

  before(async () => {
    proxy = await TcpProxy.inFrontOf(testEnv().databaseUrl);
    db = createDataSource({ url: proxy.urlFor(testEnv().databaseUrl), embedded: false });
    await db.initialize();
    service = new ProviderCallbackService(db, { aiDebounceMs: 60_000 });
    const ws = await newWorkspace();
    client = (await ws.key(["messages:read", "connections:read", "connections:write"])).client;
    const slug = `spool-${randomBytes(3).toString("hex")}`;
    const created = await expectOk(client.connections.create({ body: { slug } }));
    connection = { id: created.id, slug, token: created.callback_token };
  });
  after(async () => {
    await proxy.restore();
    await db.destroy();
    await proxy.cut();
  });

  const inbound = (text: string): Report => ({
    type: "message.inbound",
    event_id: `bly_in_${text.replace(/\W/g, "_")}`,
    provider_message_id: `ID_${text.replace(/\W/g, "_")}`,
    from: uniquePhone("+1554"),
    body: text,
    timestamp: new Date().toISOString(),
  });
  const count = async (body: string) =>
    ((await testEnv().gateway.ctx.db.query(`SELECT count(*)::int AS n FROM messages WHERE connection_id = $1 AND body = $2`, [connection.id, body])) as { n: number }[])[0]!.n;

  function spoolAt(root: string, calls = { n: 0 }): ReportSpool {
    return new ReportSpool(
      root,
      async (_id, body) => {
        calls.n += 1;
        await service.handle("sandbox", connection.token, body);
      },
      logger,
      20,
    );
  }

  it("keeps reports on disk while the database is away, retrying, and applies each once when it returns", async () => {
    const root = mkdtempSync(join(tmpdir(), "spool-"));
    const calls = { n: 0 };
    const spool = spoolAt(root, calls);
    spool.open();
    await proxy.cut();
    const tag = randomBytes(3).toString("hex");
    const texts = [`away one ${tag}`, `away two ${tag}`, `away three ${tag}`];
    expect(spool.add(connection.id, texts.map(inbound))).to.equal(true);
    // Still there after many attempts: nothing is dropped while the database is away.
    await waitFor(async () => calls.n, (n) => n >= 6, 30_000);
    expect(spool.pending()).to.have.length(1);
    await proxy.restore();
    await waitFor(async () => spool.pending().length, (n) => n === 0, 30_000);
    for (const t of texts) expect(await count(t)).to.equal(1);
    await spool.close(1_000);
  });

  it("leaves a dead process's reports to the next process, which applies them once, also one applied before the crash", async () => {
    const root = mkdtempSync(join(tmpdir(), "spool-"));
    const tag = randomBytes(3).toString("hex");
    const dying = spoolAt(root);
    dying.open();
    await proxy.cut();
    const before = inbound(`applied before the crash ${tag}`);
    const never = inbound(`never applied ${tag}`);
    dying.add(connection.id, [before]);
    dying.add(connection.id, [never]);
    // One of them was committed just before the crash, its file not yet removed.
    await testEnv().gateway.ctx.services.providerCallbacks.handle("sandbox", connection.token, { events: [before as ProviderEvent] });
    await dying.close(0);
    // The process dies: its directory is left as a dead process's (4194304 is above any pid_max).
    renameSync(dying.dir, join(root, `${hostname()}~4194304~dead`));
    await proxy.restore();
    const next = spoolAt(root);
    next.open();
    await waitFor(async () => next.pending().length, (n) => n === 0, 30_000);
    expect(await count(`never applied ${tag}`)).to.equal(1);
    expect(await count(`applied before the crash ${tag}`)).to.equal(1);
    await next.close(1_000);
  });
});

