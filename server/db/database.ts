// Opens the database: the configured PostgreSQL, or the embedded one; then runs pending migrations.
import type { DataSource } from "typeorm";
import type { Logger } from "../logger.js";
import { endpointOf, isDatabaseUnavailable, waitForDependency } from "./availability.js";
import { createDataSource } from "./data-source.js";
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
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let url = options.url;
  if (!url) {
    // Loaded only here: PGlite and its socket server are for installs without DATABASE_URL.
    const { startEmbeddedPostgres } = await import("./embedded.js");
    embedded = await startEmbeddedPostgres(options.dataDir ?? undefined);
    url = embedded.url;
    options.logger.info({ data_dir: options.dataDir ?? "(memory)" }, "DATABASE_URL unset: using the embedded PostgreSQL");
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
