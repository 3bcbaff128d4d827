// Losing the database for real. A gateway process (started as an operator starts one) reaches a
// database of this file's own (a scratch database on the run's PostgreSQL, or a second embedded
// server) through a TCP proxy the test cuts and restores: idle; under load with sends, reads,
// webhook deliveries and a schedule fire in flight; and at start-up. The process
// must stay up, answer the probes and the API honestly meanwhile, and afterwards finish every
// accepted message once, without a restart.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pg from "pg";
import { createClient, expectOk } from "../sdk/src/index.js";
import { loadConfig } from "../server/config.js";
import { testEnv } from "./setup.js";
import { clientAddress, signIn, uniqueEmail } from "./support/actors.js";
import { startChildGateway, type ChildGateway } from "./support/child-gateway.js";
import { freePort } from "./support/ports.js";
import { ownDatabase, patiently, type OwnDatabase } from "./support/own-database.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { sleep, waitFor } from "./support/wait.js";

/** Settings of a child gateway on `databaseUrl`: fast hand-offs and webhook retries, mail to the capture. */
function childEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    SMTP_URL: testEnv().smtpUrl,
    DISPATCH_RATE_PER_CONNECTION: "1000",
    // A claim whose answer the cut lost is held by nobody until its lock expires: keep that short.
    DISPATCH_LOCK_SECONDS: "5",
    API_RATE_LIMIT_PER_MINUTE: "1000000",
    WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
    WEBHOOK_TIMEOUT_MS: "1500",
    WEBHOOK_RETRY_SCHEDULE: "0.5,0.5,1",
    ...extra,
  };
}

interface Answer {
  status: number;
  ms: number;
  retryAfter: string | null;
  contentType: string | null;
  body: Record<string, unknown>;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    // not JSON: the checks below report it
  }
  return { status: res.status, ms: Date.now() - started, retryAfter: res.headers.get("retry-after"), contentType: res.headers.get("content-type"), body };
}

/** What an answer during an outage must be: problem+json 503 with Retry-After, naming the database, soon. */
function expectUnavailable(a: Answer, what: string): void {
  expect(a.status, `${what}: ${JSON.stringify(a.body)}`).to.equal(503);
  expect(a.contentType, what).to.match(/^application\/problem\+json/);
  expect(a.retryAfter, what).to.match(/^\d+$/);
  expect(a.body.code, what).to.equal("unavailable");
  expect(a.body.unavailable, what).to.deep.equal(["database"]);
  expect(a.ms, `${what} took ${a.ms} ms`).to.be.below(6000);
}

/** Webhook receiver: counts every delivery by event id, and `message.read` events by message id. */
class Receiver {
  readonly byEvent = new Map<string, number>();
  readonly readByMessage = new Map<string, number>();
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        const event = JSON.parse(body) as { id: string; type: string; data: { id: string } };
        this.byEvent.set(event.id, (this.byEvent.get(event.id) ?? 0) + 1);
        if (event.type === "message.read") this.readByMessage.set(event.data.id, (this.readByMessage.get(event.data.id) ?? 0) + 1);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hooks`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("database outage", function () {
  this.timeout(120_000);
  let target: OwnDatabase;
  let proxy: TcpProxy;
  let db: pg.Client;
  let child: ChildGateway;
  let apiKey: string;
  let slug: string;
  const receiver = new Receiver();
  /** Every message any test here had accepted (202): the database must hold exactly these. */
  const accepted = new Set<string>();

  const authorized = (init: RequestInit = {}): RequestInit => ({
    ...init,
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) },
  });
  const send = (to: string, idempotencyKey: string, extra: Record<string, unknown> = {}) =>
    call(`${child.url}/v1/messages/text`, authorized({ method: "POST", headers: { "idempotency-key": idempotencyKey }, body: JSON.stringify({ connection: slug, to, body: "through the outage", ...extra }) }));

  /** Waits until every message of `ids` is `read` (the sandbox's final status), reading the database directly. */
  async function allRead(ids: string[], timeoutMs = 40_000): Promise<void> {
    await waitFor(
      async () => {
        const found = (await db.query<{ id: string; status: string }>(`SELECT id, status FROM messages WHERE id = ANY($1)`, [ids])).rows;
        const known = new Set(found.map((m) => m.id));
        return { notRead: found.filter((m) => m.status !== "read"), missing: ids.filter((id) => !known.has(id)) };
      },
      (state) => state.notRead.length === 0 && state.missing.length === 0,
      timeoutMs,
      200,
    );
  }

  before(async function () {
    this.timeout(120_000);
    target = await ownDatabase();
    proxy = await TcpProxy.inFrontOf(target.url);
    const owner = uniqueEmail("outage-owner");
    child = await startChildGateway(childEnv(proxy.urlFor(target.url), { ADMIN_EMAIL: owner }));
    db = await patiently(async () => {
      const direct = new pg.Client({ connectionString: target.url });
      // A dropped connection fails the next query; unheard, its error would end the run.
      direct.on("error", () => undefined);
      await direct.connect();
      return direct;
    });
    // The first workspace is made on the free plan; schedules need one with scheduling.
    await db.query(`UPDATE workspaces SET plan_id = 'pro'`);
    const cookie = await signIn(owner, clientAddress(), child.url);
    const session = createClient({ baseUrl: child.url, cookie });
    const scopes = ["messages:read", "messages:write", "connections:read", "connections:write", "webhooks:read", "webhooks:write", "schedules:write"] as const;
    apiKey = (await expectOk(session.workspace.createApiKey({ body: { name: "outage", scopes: [...scopes], environment: "live" } }))).key;
    const api = createClient({ baseUrl: child.url, apiKey });
    slug = "outage";
    await pairConnection(api, slug, uniquePhone("+1558"), { baseUrl: child.url });
    await expectOk(api.webhooks.create({ body: { url: await receiver.start(), events: ["message.read"] } }));
  });

  after(async function () {
    this.timeout(60_000);
    // Each step even when an earlier one (or the before hook) failed, so nothing is left running.
    const steps = [() => proxy?.restore(), () => child?.kill(), () => db?.end(), () => proxy?.cut(), () => receiver.stop(), () => target?.close()];
    for (const step of steps) await Promise.resolve().then(step).catch((err: unknown) => console.error(err));
  });

  it("stays up when the database goes away while idle, answers 503 meanwhile, and is ready again once it is back", async () => {
    await proxy.cut();
    // The pools' idle connections are reset: before, an error listener was missing and the
    // process exited on the first such error. Once the errors are logged, it lived through them.
    await waitFor(async () => child.process.exitCode !== null || /connection lost|notification channel lost/.test(child.output()), (seen) => seen, 20_000, 50);
    expect(child.process.exitCode, child.output()).to.equal(null);
    expect((await call(`${child.url}/healthz`)).status).to.equal(200);
    const ready = await call(`${child.url}/readyz`);
    expect(ready.status).to.equal(503);
    expect(ready.body.unavailable).to.deep.equal(["database"]);
    expectUnavailable(await call(`${child.url}/v1/messages?limit=5`, authorized()), "list during the outage");
    const key = randomUUID();
    const to = uniquePhone("+1558");
    expectUnavailable(await send(to, key), "send during the outage");

    await proxy.restore();
    const back = Date.now();
    await waitFor(() => call(`${child.url}/readyz`), (a) => a.status === 200, 30_000, 50);
    console.log(`      ready ${Date.now() - back} ms after the database came back (idle outage)`);
    // The refused send wrote nothing: its retry with the same key is accepted once.
    const retried = await send(to, key);
    expect(retried.status, JSON.stringify(retried.body)).to.equal(202);
    accepted.add(retried.body.id as string);
    await allRead([retried.body.id as string]);
    expect(child.process.exitCode).to.equal(null);
  });

  it("answers a send whose statement committed but whose answer was lost 202 once, with or without Idempotency-Key", async function () {
    // The trap recognises the send by its prepared statement's name. test/send-batch.test.ts cuts a
    // shared statement for certain.
    const post = (text: string, idempotencyKey: string | undefined) =>
      call(
        `${child.url}/v1/messages/text`,
        authorized({ method: "POST", headers: idempotencyKey ? { "idempotency-key": idempotencyKey } : {}, body: JSON.stringify({ connection: slug, to: uniquePhone("+1558"), body: text }) }),
      );
    const tag = randomUUID();
    // Several sent together (they often share a statement), then one alone, without and with a key.
    const rounds = [Array.from({ length: 6 }, (_, i) => `${tag} together ${i}`), [`${tag} alone`], [`${tag} alone keyed`]];
    const ids: string[] = [];
    for (const [r, texts] of rounds.entries()) {
      const lost = proxy.loseAnswerTo("send-messages");
      const answers = await Promise.all(texts.map((text, i) => post(text, r === 2 || i % 2 === 1 ? randomUUID() : undefined)));
      await lost;
      for (const [i, a] of answers.entries()) {
        // Before the fix: 503 alone (a retry without a key wrote it twice), 500 in a shared statement.
        expect(a.status, `${texts[i]}: ${JSON.stringify(a.body)}`).to.equal(202);
        expect(a.body).to.include({ body: texts[i], status: "queued" });
        ids.push(a.body.id as string);
      }
    }
    const stored = await db.query<{ id: string }>(`SELECT id FROM messages WHERE body LIKE $1 ORDER BY id`, [`${tag} %`]);
    expect(stored.rows.map((m) => m.id)).to.deep.equal([...ids].sort());
    for (const id of ids) accepted.add(id);
    await allRead(ids);
    const handed = await db.query<{ message_id: string; n: string }>(`SELECT message_id, count(*) AS n FROM sandbox_deliveries WHERE message_id = ANY($1) GROUP BY message_id`, [ids]);
    expect(handed.rows.length).to.equal(ids.length);
    expect(handed.rows.filter((h) => h.n !== "1")).to.deep.equal([]);
    expect(child.process.exitCode).to.equal(null);
  });

  it("loses and doubles nothing when the database goes away under load", async function () {
    // Its waits add up to more than the file's 120 s on a machine loaded by every CI pass at once.
    this.timeout(240_000);
    type Phase = "before" | "during" | "after";
    let phase: Phase = "before";
    let stopping = false;
    const sent: { id: string; phase: Phase; refused: number }[] = [];
    const wrong: string[] = [];
    const outageAnswers: Answer[] = [];

    const sender = async () => {
      while (!stopping) {
        const to = uniquePhone("+1558");
        const key = randomUUID();
        const firstTried = phase;
        let refused = 0;
        for (;;) {
          const a = await send(to, key);
          if (a.status === 202) {
            sent.push({ id: a.body.id as string, phase: firstTried, refused });
            break;
          }
          if (a.status === 503) {
            refused++;
            outageAnswers.push(a);
            // A client honouring Retry-After would wait longer; the test retries sooner to load the recovery.
            await sleep(200);
            continue;
          }
          wrong.push(`send answered ${a.status}: ${JSON.stringify(a.body)}`);
          break;
        }
        await sleep(10);
      }
    };
    const reader = async () => {
      while (!stopping) {
        const a = await call(`${child.url}/v1/messages?limit=20`, authorized());
        if (a.status === 503) outageAnswers.push(a);
        else if (a.status !== 200) wrong.push(`list answered ${a.status}: ${JSON.stringify(a.body)}`);
        await sleep(20);
      }
    };
    const workers = [sender(), sender(), sender(), sender(), reader()];

    // Sends in flight before the cut.
    await waitFor(async () => sent.length, (n) => n >= 20, 30_000, 20);
    // A schedule's fire due in the middle of the outage (made due in SQL, as the schedule tests do):
    // fired once, by the child after the outage or by the test's own gateway, which is not cut off.
    const api = createClient({ baseUrl: child.url, apiKey });
    const schedule = await expectOk(
      api.schedules.create({ body: { name: "outage", timezone: "UTC", recurrence: { type: "daily", hour: 3, minute: 0 }, message: { connection: slug, to: uniquePhone("+1558"), body: "fired" } } }),
    );
    // Whole milliseconds, as the gateway computes them: the fire records its run by this instant.
    const [{ due }] = (await db.query<{ due: Date }>(`UPDATE schedules SET next_run_at = date_trunc('milliseconds', now() + interval '2500 milliseconds') WHERE id = $1 RETURNING next_run_at AS due`, [schedule.id])).rows as [{ due: Date }];
    phase = "during";
    await proxy.cut();
    expect((await call(`${child.url}/healthz`)).status).to.equal(200);
    const ready = await waitFor(() => call(`${child.url}/readyz`), (a) => a.status !== 200, 4_000, 50);
    expect(ready.status).to.equal(503);
    expect(ready.body.unavailable).to.deep.equal(["database"]);
    // The outage lasts until the schedule's fire fell due in it and the API has refused sends.
    await waitFor(async () => ({ pastDue: Date.now() > due.getTime(), refused: outageAnswers.length }), (o) => o.pastDue && o.refused >= 8, 30_000, 50);
    await proxy.restore();
    const back = Date.now();
    await waitFor(() => call(`${child.url}/readyz`), (a) => a.status === 200, 30_000, 50);
    const toReady = Date.now() - back;
    phase = "after";
    // Sends first tried after the outage, while the backlog is worked off.
    await waitFor(async () => sent.filter((s) => s.phase === "after").length, (n) => n >= 20, 30_000, 20);
    stopping = true;
    await Promise.all(workers);

    expect(wrong, wrong.join("\n")).to.deep.equal([]);
    expect(outageAnswers.length, "answers refused during the outage").to.be.above(0);
    for (const a of outageAnswers) expectUnavailable(a, "answer during the outage");
    const runs = await waitFor(
      async () => (await db.query<{ message_id: string; error_code: string | null }>(`SELECT message_id, error_code FROM schedule_runs WHERE schedule_id = $1`, [schedule.id])).rows,
      (r) => r.length > 0 && r[0]!.message_id !== null,
      45_000,
      200,
    );
    expect(runs.length, "fires of the schedule").to.equal(1);
    expect(runs[0]!.message_id, `the fire's message (${JSON.stringify(runs[0])})`).to.be.a("string");
    const ids = [...sent.map((s) => s.id), runs[0]!.message_id];
    for (const id of ids) accepted.add(id);
    await allRead(ids);
    const toFinal = Date.now() - back;

    // Exactly what was accepted is stored, each handed to the network once.
    const stored = (await db.query<{ id: string }>(`SELECT id FROM messages WHERE direction = 'outbound'`)).rows.map((r) => r.id);
    expect(new Set(stored).size).to.equal(stored.length);
    expect([...stored].sort()).to.deep.equal([...accepted].sort());
    const handed = await db.query<{ message_id: string; n: string }>(
      `SELECT message_id, count(*) AS n FROM sandbox_deliveries WHERE message_id = ANY($1) GROUP BY message_id`,
      [ids],
    );
    expect(handed.rows.length).to.equal(ids.length);
    expect(handed.rows.filter((r) => r.n !== "1")).to.deep.equal([]);
    // Each message's `message.read` webhook arrived once, deliveries in flight at the cut included.
    await waitFor(async () => ids.filter((id) => !receiver.readByMessage.has(id)).length, (missing) => missing === 0, 30_000, 200);
    expect([...receiver.readByMessage].filter(([, n]) => n !== 1)).to.deep.equal([]);
    expect([...receiver.byEvent].filter(([, n]) => n !== 1)).to.deep.equal([]);
    expect(child.process.exitCode).to.equal(null);
    // And it still stops the graceful way.
    expect(await child.terminate()).to.equal(0);

    const count = (p: Phase) => sent.filter((s) => s.phase === p).length;
    console.log(
      `      under load: ready ${toReady} ms after the database came back, every message read ${toFinal} ms after; accepted: ` +
        `${count("before")} first tried before the cut, ${count("during")} during the outage, ${count("after")} after it, ` +
        `${sent.filter((s) => s.refused > 0).length} of them after 503s, 1 schedule fire due during it; ` +
        `all ${ids.length} read, each handed to the network once, each message.read webhook delivered once`,
    );
  });
});

describe("start-up without the database", function () {
  this.timeout(60_000);

  it("waits for it, alive but not ready, logging each attempt, and starts once it is there", async () => {
    const target = await ownDatabase();
    const proxy = await TcpProxy.inFrontOf(target.url);
    await proxy.cut();
    const child = await startChildGateway(childEnv(proxy.urlFor(target.url)), { ready: false });
    try {
      await waitFor(() => call(`${child.url}/healthz`), (a) => a.status === 200, 20_000, 100);
      const ready = await call(`${child.url}/readyz`);
      expect(ready.status).to.equal(503);
      expect(ready.body.unavailable).to.deep.equal(["database"]);
      expectUnavailable(await call(`${child.url}/v1/messages`), "API while starting");
      await waitFor(async () => child.output().match(/waiting for the database at 127\.0\.0\.1:\d+: (connect )?ECONNREFUSED/g)?.length ?? 0, (n) => n >= 2, 20_000, 100);
      await proxy.restore();
      await waitFor(() => call(`${child.url}/readyz`), (a) => a.status === 200, 30_000, 100);
      expect(child.process.exitCode).to.equal(null);
    } finally {
      await child.terminate();
      await proxy.cut();
      await target.close();
    }
  });

  it("gives up after DATABASE_WAIT_S with a one-line reason", async () => {
    const port = await freePort();
    const child = await startChildGateway(childEnv(`postgres://postgres@127.0.0.1:${port}/nowhere`, { DATABASE_WAIT_S: "1" }), { ready: false });
    expect(await child.exited).to.equal(1);
    const last = child.output().trim().split("\n").at(-1)!;
    const gaveUp = new RegExp(`^svc-gateway: cannot start: gave up waiting for the database at 127\\.0\\.0\\.1:${port} after (\\d+) s \\(DATABASE_WAIT_S=1\\): (connect )?ECONNREFUSED`).exec(last);
    expect(gaveUp, last).to.not.equal(null);
    // It waited about the second it was given (its own clock: the process's start-up on a loaded
    // machine is not part of the wait), not the default minute.
    expect(Number(gaveUp![1])).to.be.at.most(3);
    expect(child.output()).not.to.match(/^\s+at /m);
  });

  it("gives up on an unreachable JOBS_MONGODB_URL the same way", async () => {
    const port = await freePort();
    const child = await startChildGateway(childEnv(testEnv().databaseUrl, { JOBS_MONGODB_URL: `mongodb://127.0.0.1:${port}/jobs`, DATABASE_WAIT_S: "1" }), { ready: false });
    try {
      await waitFor(() => call(`${child.url}/readyz`).catch(() => undefined), (a) => a?.status === 503 && (a.body.unavailable as string[])[0] === "job runner", 20_000, 100);
      expect((await call(`${child.url}/healthz`)).status).to.equal(200);
      expect(await child.exited).to.equal(1);
      const last = child.output().trim().split("\n").at(-1)!;
      expect(last).to.match(new RegExp(`^svc-gateway: cannot start: gave up waiting for the MongoDB job backend at 127\\.0\\.0\\.1:${port} after \\d+ s \\(DATABASE_WAIT_S=1\\): `));
      expect(child.output()).not.to.match(/^\s+at /m);
    } finally {
      await child.kill();
    }
  });

  it("accepts DATABASE_WAIT_S from 0 to 3600 seconds", () => {
    const wait = (v: string) => loadConfig({ DATABASE_WAIT_S: v, DATA_DIR: testEnv().dataDir }).databaseWaitMs;
    expect(wait("0")).to.equal(0);
    expect(wait("3600")).to.equal(3_600_000);
    expect(() => wait("-1")).to.throw(/DATABASE_WAIT_S/);
    expect(() => wait("3601")).to.throw(/DATABASE_WAIT_S/);
    expect(loadConfig({ DATA_DIR: testEnv().dataDir }).databaseWaitMs).to.equal(60_000);
  });
});

describe("a database that stops answering", function () {
  this.timeout(90_000);

  it("does not hold a graceful stop: after 30 s it says what it still waited on and exits 0", async () => {
    const target = await ownDatabase();
    const proxy = await TcpProxy.inFrontOf(target.url);
    const child = await startChildGateway(childEnv(proxy.urlFor(target.url)));
    try {
      // Silent, not gone: nothing the gateway sends is answered, and no connection of its ends.
      proxy.stall();
      const stopping = Date.now();
      expect(await child.terminate()).to.equal(0);
      const took = Date.now() - stopping;
      expect(took, "ms from SIGTERM to exit").to.be.within(29_000, 45_000);
      expect(child.output()).to.match(/"msg":"shutdown: gave up after 30 s, still closing the [^"]+"/);
    } finally {
      await child.kill();
      await proxy.cut();
      await target.close();
    }
  });
});
