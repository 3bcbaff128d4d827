// Opens the database: the configured PostgreSQL, or the embedded one; then runs pending migrations.
import type { DataSource } from "typeorm";
import type { Logger } from "../logger.js";
import { createDataSource } from "./data-source.js";
import type { EmbeddedPostgres } from "./embedded.js";
import { markSharedSession } from "./prepared.js";

export interface Database {
  dataSource: DataSource;
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

/** `dataDir` null keeps an embedded database in memory (tests). */
export async function openDatabase(options: { url?: string | undefined; dataDir: string | null; logger: Logger }): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let url = options.url;
  if (!url) {
    // Loaded only here: PGlite and its socket server are for installs without DATABASE_URL.
    const { startEmbeddedPostgres } = await import("./embedded.js");
    embedded = await startEmbeddedPostgres(options.dataDir ?? undefined);
    url = embedded.url;
    options.logger.info({ data_dir: options.dataDir ?? "(memory)" }, "DATABASE_URL unset: using the embedded PostgreSQL");
  }
  const dataSource = createDataSource({ url, embedded: Boolean(embedded) });
  await dataSource.initialize();
  // Another process's embedded database (a second gateway, the CLI) is reached by URL: ask it.
  const [{ version } = { version: "" }] = (await dataSource.query(`SELECT version()`)) as { version: string }[];
  if (embedded || version.includes("PGlite")) markSharedSession(dataSource);
  const ran = await dataSource.runMigrations({ transaction: "each" });
  if (ran.length) options.logger.info({ migrations: ran.map((m) => m.name) }, "migrations applied");
  return {
    dataSource,
    url,
    embedded: Boolean(embedded),
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
