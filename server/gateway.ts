// Assembling the process: http (probes only) → database → jobs → the full app, and taking it apart again in reverse.
import { ApiKeyCache } from "./auth/key-cache.js";
import { DatabaseListener } from "./db/listener.js";
import { createServer, type RequestListener, type Server } from "node:http";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { JobRunner } from "../jobs/runner.js";
import { ConfigError, type Config } from "./config.js";
import { compose, composeApp, type Composed, type GatewayParts } from "./compose.js";
import { createProviderCallbacks } from "./provider/index.js";
import { scheduleRecurringJobs } from "../jobs/index.js";
import { isDatabaseUnavailable, waitForDependency } from "./db/availability.js";
import { databaseReachable, openDatabase, type Database } from "./db/database.js";
import { EventFeed } from "./events/stream.js";
import { createEventSinks, type EventSinks } from "./events/sinks/index.js";
import { createLogger, type Logger } from "./logger.js";
import { ensureWebBuild } from "./web/build.js";
import { createMailer } from "./mail/mailer.js";
import { Metrics } from "./ops/metrics.js";
import { createStartingApp } from "./ops/starting.js";
import { EngineRegistry } from "./engines/engine.js";
import { createSandboxEngine } from "./engines/sandbox/index.js";
import { BaileysEngine } from "./engines/baileys/engine.js";
import { rows } from "./db/rows.js";

export interface Gateway {
  /** The composed parts (server/compose.ts): services, configuration, database; for tests and benchmarks. */
  ctx: GatewayParts;
  database: Database;
  /** The brokers' sinks of the event outbox (none unless EVENTS_NATS_URL / EVENTS_AMQP_URL). */
  eventSinks: EventSinks;
  server: Server;
  /** Where the HTTP server listens, e.g. http://127.0.0.1:3000 */
  url: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Embedded database in memory instead of DATA_DIR (tests). */
  inMemoryDatabase?: boolean;
}

export async function startGateway(config: Config, options: StartOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // Before the port opens: the dashboard is rebuilt here when web/dist is missing or stale.
  ensureWebBuild(logger, config.production);
  const metrics = new Metrics();
  // The port is opened first and answers the probes while start-up waits for the database and the
  // job backend (DATABASE_WAIT_S): alive, not ready, naming what is awaited. The full app takes
  // over the same server once everything is up.
  let awaiting = "database";
  let handler: RequestListener = createStartingApp(config, logger, metrics, { unavailable: async () => [awaiting] });
  const server = createServer((req, res) => handler(req, res));
  // Longer than the idle timeout of the proxies and clients that reuse connections (60 s is the
  // common one): with Node's 5 s, a client reusing a connection just as the server closes it gets a
  // reset (a dashboard test's API request did, on a loaded machine); the headers timeout stays above it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
    server.listen(config.port, config.host);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ url }, `listening on ${url}: /healthz answers now, /readyz once the database and the job backend are up`);

  const opened: Opened[] = [];
  let database: Database;
  let jobs: JobRunner;
  let composed: Composed;
  try {
    database = await openDatabase({ url: config.databaseUrl, dataDir: options.inMemoryDatabase ? null : config.dataDir, logger, waitMs: config.databaseWaitMs, httpUrl: url });
    opened.push({ name: "database", close: () => database.close() });
    awaiting = "job runner";
    logger.info("starting the job runner");
    const runner = await JobRunner.create({ databaseUrl: database.url, embedded: database.sharedSession, mongoUrl: config.jobsMongoUrl, logger, waitMs: config.databaseWaitMs });
    jobs = runner;
    opened.push({ name: "job runner", close: () => runner.stop() });
    const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, outboxDir: join(config.dataDir, "outbox"), logger, metrics, production: config.production });
    opened.push({ name: "mailer", close: () => mailer.close() });
    // Not awaited: an unreachable mail server is said in one line, and start-up goes on (docs/decisions.md).
    void mailer.checkReachable();
    const engines = new EngineRegistry();
    const db = database.dataSource;
    const listener = new DatabaseListener(database.url, logger);
    metrics.countConnectionsWith(() => rows(db, `SELECT transport AS engine, state, count(*)::int AS n FROM connections WHERE deleted_at IS NULL GROUP BY 1, 2`));
    // Engines report through it, so inbound messages start AI runs whatever engine received them.
    const providerCallbacks = createProviderCallbacks({ db, config });
    if (config.sandboxEnabled) engines.register(createSandboxEngine({ db, config, logger, callbacks: providerCallbacks, listener }));
    // Always registered: a connection keeps the engine it was created with, whatever TRANSPORT says now.
    engines.register(
      new BaileysEngine({
        db,
        callbacks: providerCallbacks,
        secretKey: config.secretKey,
        logger,
        metrics,
        mediaPolicy: { allowPrivate: config.webhooks.allowPrivate },
        leaseSeconds: config.baileys.leaseSeconds,
        relaySpacingMs: 1000 / config.dispatch.ratePerConnection,
        socketModule: config.baileys.socketModule,
        waVersion: config.baileys.waVersion,
        spoolDir: join(config.dataDir, "baileys-reports"),
        defaultProxyUrl: config.baileys.proxyUrl,
        pace: config.baileys.pace,
      }),
    );
    const keyCache = new ApiKeyCache(listener);
    const eventFeed = new EventFeed(database.dataSource);
    composed = compose({ config, db: database.dataSource, logger, mailer, metrics, jobs, engines, keyCache, listener, eventFeed }, providerCallbacks);
    const started = composed.parts;
    await listener.start();
    opened.push({ name: "LISTEN connection", close: () => listener.stop() });
    for (const job of composed.jobs) runner.define(job);
    // The database may drop (or refuse: too many connections) between opening and here: the first
    // writes wait for it as well. Each is safe to repeat.
    await waitForDependency(
      async () => {
        await bootstrap(started);
        await runner.start();
        await scheduleRecurringJobs(runner);
      },
      { what: "the database (first writes)", waitMs: config.databaseWaitMs, setting: "DATABASE_WAIT_S", retryable: isDatabaseUnavailable, logger },
    );
  } catch (err) {
    // Nothing half-open is left behind: the caller reports the reason and exits.
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await closeInReverse(opened, logger);
    throw err;
  }
  const ctx = composed.parts;
  const { engines, mailer } = ctx;
  let stopping = false;
  // Ready once the engines are open and the loops run: the full app serves from here on (the
  // engines report through its callback route while they open), but a probe says ready only then.
  let started = false;
  handler = composeApp(composed, {
    async unavailable() {
      const down: string[] = [];
      if (!started) down.push("engines (opening)");
      if (stopping) down.push("process (shutting down)");
      if (!(await databaseReachable(database.dataSource))) down.push("database");
      if (!jobs.ready) down.push("job runner");
      return down;
    },
    warnings() {
      // No detail beyond the time: the probe answers anyone; the log has the reason.
      const { failingSince } = mailer.status();
      return failingSince ? [`mail: failing since ${failingSince.toISOString()} (sign-in codes and invitations are not going out; see the log)`] : [];
    },
  });
  // Engines report to our HTTP callback route, so they start once it listens.
  await engines.open();
  // Every loop of the process, in one list: started in this order, stopped in reverse with what
  // was opened before them (the job runner, the LISTEN connection, the mailer, the database).
  // Last, with nothing awaited between them and the return: a signal while starting ends the
  // process at once (server/main.ts), which must not cut a hand-off the dispatcher began.
  const eventSinks = createEventSinks(ctx);
  for (const loop of [...composed.loops, eventSinks]) {
    loop.start();
    opened.push({ name: loop.constructor.name, close: () => loop.stop() });
  }
  started = true;

  return {
    ctx,
    database,
    eventSinks,
    server,
    url,
    /** Stops accepting, finishes requests and jobs in flight, then closes the database. */
    async stop() {
      if (stopping) return;
      stopping = true;
      // First, so that no engine report is cut off half-way by the closing server.
      await closeInReverse(
        [
          ...opened,
          {
            name: "HTTP server",
            close: () =>
              new Promise<void>((resolve) => {
                server.close(() => resolve());
                server.closeIdleConnections();
                // Requests still running after 10 s are cut so a stuck client cannot block shutdown.
                setTimeout(() => server.closeAllConnections(), 10_000).unref();
              }),
          },
          { name: "engines", close: () => engines.close() },
        ],
        logger,
      );
    },
  };
}

/** Something start-up opened, closed at stop; `name` says which in the log when closing it is slow. */
interface Opened {
  name: string;
  close(): Promise<void> | void;
}

/** A part that takes this long to close is named in the log: a slow shutdown says what it waited on. */
const SLOW_CLOSE_MS = 2_000;

/**
 * A shutdown still closing after this gives up waiting, with a warning that names what it left:
 * the parts left are told to close and the stop returns (the process then exits). A stop that
 * never ends would end in the supervisor's SIGKILL anyway, and the gateway survives that (nothing
 * accepted is lost or doubled by it).
 */
const GIVE_UP_CLOSING_MS = 30_000;

/** Closes `opened` last first (what was opened later may use what was opened before it). */
async function closeInReverse(opened: Opened[], logger: Logger): Promise<void> {
  const giveUpAt = Date.now() + GIVE_UP_CLOSING_MS;
  const parts = [...opened].reverse();
  for (const [index, part] of parts.entries()) {
    const at = Date.now();
    // Said while it waits, too: a shutdown that never ends says what it waits on.
    const waiting = setTimeout(() => logger.info({ part: part.name }, `shutdown: still closing the ${part.name}`), SLOW_CLOSE_MS * 5);
    waiting.unref();
    let giveUp: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (giveUp = setTimeout(() => resolve("late"), Math.max(0, giveUpAt - at))));
    try {
      if ((await Promise.race([Promise.resolve(part.close()), late])) === "late") {
        const left = parts.slice(index);
        for (const rest of left.slice(1)) Promise.resolve(rest.close()).catch(() => undefined);
        logger.warn({ parts: left.map((p) => p.name) }, `shutdown: gave up after ${GIVE_UP_CLOSING_MS / 1000} s, still closing the ${part.name}`);
        return;
      }
    } finally {
      clearTimeout(waiting);
      clearTimeout(giveUp);
    }
    const ms = Date.now() - at;
    if (ms >= SLOW_CLOSE_MS) logger.info({ part: part.name, ms }, `shutdown: closing the ${part.name} took ${ms} ms`);
  }
}

/** First start with an empty database: a workspace owned by ADMIN_EMAIL, and how to sign in. */
async function bootstrap(ctx: GatewayParts): Promise<void> {
  if (!(await ctx.services.workspaces.isEmpty())) return;
  const owner = ctx.config.adminEmail;
  // An owner nobody can reach (admin@localhost) would lock the operator out of a production install.
  if (!owner) {
    throw new ConfigError(
      "ADMIN_EMAIL is required on the first start of a production gateway (the database has no workspace yet): " +
        "set it to the address of the first workspace's owner, who signs in with a code mailed there",
    );
  }
  const workspace = await ctx.services.workspaces.create("Default workspace", owner);
  ctx.logger.info(
    { workspace_id: workspace.id, owner },
    `created the first workspace, owned by ${owner}. Sign in at ${ctx.config.webUrl}/ as ${owner}, ` +
      `with the code mailed ${ctx.config.smtpUrl ? "to that address" : "to this log (a line starting \"development outbox:\")"}; ` +
      `or by API: POST ${ctx.config.baseUrl}/v1/auth/request-code {"email":"${owner}"}, then /v1/auth/verify with the code.`,
  );
}
