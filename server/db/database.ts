// Opens the database: the configured PostgreSQL, or the embedded one; then runs pending migrations.
import pg from "pg";
import type { DataSource } from "typeorm";
import type { Logger } from "../logger.js";
import { endpointOf, isDatabaseUnavailable, waitForDependency } from "./availability.js";
import { createDataSource } from "./data-source.js";
import { DataDirInUseError, lockDataDir } from "./data-dir-lock.js";
import type { EmbeddedPostgres } from "./embedded.js";
import { markSharedSession } from "./prepared.js";

export interface Database {
  dataSource: DataSource;
  url: string;
  embedded: boolean;
  /**
   * The server is the embedded one (this process's or another's, reached by URL): one session
   * shared by every connection, where LISTEN/NOTIFY does not work.
   */
  sharedSession: boolean;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  url?: string | undefined;
  /** null keeps an embedded database in memory (tests). */
  dataDir: string | null;
  logger: Logger;
  /** How long to wait for an unreachable server (DATABASE_WAIT_S); 0 or unset: fail at once. */
  waitMs?: number;
  /** A gateway's HTTP address, published in DATA_DIR's lock file beside the database's (`svc-gateway health` reads it). */
  httpUrl?: string;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let url = options.url;
  if (!url) {
    embedded = await openEmbedded(options.dataDir, options.logger, options.httpUrl);
    url = embedded.url;
  }
  const logger = options.logger;
  const onPoolError = (err: Error) => logger.warn({ err }, "database connection lost; the pool opens a new one when needed");
  const dataSourceUrl = url;
  let sharedSession = false;
  // Each attempt starts afresh: a data source whose initialize() failed is not reused. Migrations
  // run inside the attempt, one transaction each, so one cut short is simply run again.
  const dataSource = await waitForDependency(
    async () => {
      const ds = createDataSource({ url: dataSourceUrl, embedded: Boolean(embedded), onPoolError });
      try {
        await ds.initialize();
        // Another process's embedded database (a second gateway, the CLI) is reached by URL: ask it.
        const [{ version } = { version: "" }] = (await ds.query(`SELECT version()`)) as { version: string }[];
        sharedSession = Boolean(embedded) || version.includes("PGlite");
        if (sharedSession) markSharedSession(ds);
        if (await ds.showMigrations()) logger.info("applying database migrations");
        const ran = await ds.runMigrations({ transaction: "each" });
        if (ran.length) logger.info({ migrations: ran.map((m) => m.name) }, "migrations applied");
        return ds;
      } catch (err) {
        if (ds.isInitialized) await ds.destroy().catch(() => undefined);
        throw err;
      }
    },
    { what: `the database at ${endpointOf(url)}`, waitMs: options.waitMs ?? 0, setting: "DATABASE_WAIT_S", retryable: isDatabaseUnavailable, logger },
  );
  return {
    dataSource,
    url,
    embedded: Boolean(embedded),
    sharedSession,
    async close() {
      await dataSource.destroy();
      await embedded?.stop();
    },
  };
}

/**
 * The embedded database of DATA_DIR: started here when no process holds DATA_DIR, else the one
 * the holder runs, reached through the address in its lock file (a single engine per directory).
 */
async function openEmbedded(dataDir: string | null, logger: Logger, httpUrl: string | undefined): Promise<EmbeddedPostgres> {
  // Loaded only when started here: PGlite and its socket server are for installs without DATABASE_URL.
  const start = async (dir: string | undefined) => (await import("./embedded.js")).startEmbeddedPostgres(dir, logger);
  if (!dataDir) {
    logger.info({ data_dir: "(memory)" }, "DATABASE_URL unset: using the embedded PostgreSQL");
    return start(undefined);
  }
  const outcome = await lockDataDir(dataDir);
  if (!outcome.held) {
    await probe(outcome.url).catch((err: unknown) => {
      throw new DataDirInUseError(
        `DATA_DIR ${dataDir} is held by process ${outcome.pid}, whose embedded database does not answer (${describe(err)}); ` +
          `stop that process, or delete ${outcome.file} if it is not a svc-gateway`,
      );
    });
    logger.info({ data_dir: dataDir, pid: outcome.pid }, "DATABASE_URL unset: using the embedded PostgreSQL of the process that holds DATA_DIR");
    return { url: outcome.url, stop: async () => undefined };
  }
  const { lock } = outcome;
  try {
    const started = await start(dataDir);
    lock.publish(started.url, httpUrl);
    logger.info({ data_dir: dataDir }, "DATABASE_URL unset: using the embedded PostgreSQL");
    return {
      url: started.url,
      async stop() {
        try {
          await started.stop();
        } finally {
          lock.release();
        }
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/** One connection and a query, bounded in time: the holder may be alive but stuck, or not ours. */
async function probe(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 5000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
  } finally {
    await client.end().catch(() => undefined);
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? String(err);
}

export async function databaseReachable(dataSource: DataSource, timeoutMs = 2000): Promise<boolean> {
  if (!dataSource.isInitialized) return false;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      dataSource.query("SELECT 1"),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
