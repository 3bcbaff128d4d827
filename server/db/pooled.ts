// Statements with large results, run on TypeORM's pg pool through pg-pool's `pool.query()`
// instead of `db.query()`.
//
// `db.query()` reaches pg through its promise API (`client.query(text, values)` without a
// callback), and on Node 20 with pg 8.23 every result read that way outlives young-generation
// collections: measured with 100 statements of 2,000 rows each, the old generation grows by ~22 MB
// through the promise API and by nothing through `pool.query()`, which drives pg with a callback.
// (The difference reproduces with a bare pg.Client: a Query whose callback is assigned inside the
// promise executor, as pg's query() does, gets its rows promoted; the same Query given its callback
// up front does not.) For a page of 100 rows that is invisible; for the CSV export, which reads a
// million rows in a loop, it was most of the process's memory growth until the next full
// collection (docs/performance.md, Export).
//
// Unnamed statements only, outside transactions: on the embedded database every client connection
// shares one session, which is safe for those (see prepared.ts for the named ones).
import type { Pool } from "pg";
import type { DataSource } from "typeorm";
import type { PostgresDriver } from "typeorm/driver/postgres/PostgresDriver.js";

/** Runs one autocommit statement on the data source's pool and returns its rows. */
export async function pooledRows<T = Record<string, unknown>>(db: DataSource, text: string, params: unknown[] = []): Promise<T[]> {
  const pool = (db.driver as PostgresDriver).master as Pool;
  const result = await pool.query(text, params);
  return result.rows as T[];
}
