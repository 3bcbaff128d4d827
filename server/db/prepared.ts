// Named prepared statements for the hot paths (authentication, accepting a message, hand-off).
// PostgreSQL plans a named statement once per connection instead of on every call; for the joins
// and multi-CTE statements of these paths that is most of their cost (measured: the API-key
// lookup goes from ~1,200 to ~8,700 a second at 50 concurrent callers).
//
// Not on the embedded database: its one backend session is shared by every client connection,
// and a name prepared through one connection would collide with the same name from another.
import type { DataSource } from "typeorm";
import type { PostgresDriver } from "typeorm/driver/postgres/PostgresDriver.js";
import type { Pool } from "pg";
import { rows } from "./rows.js";

const sharedSession = new WeakSet<DataSource>();

/** Marks a data source whose server multiplexes clients onto one session (the embedded one). */
export function markSharedSession(db: DataSource): void {
  sharedSession.add(db);
}

const asyncCommitPools = new WeakMap<DataSource, Pool>();

export interface PreparedOptions {
  /**
   * Commit without waiting for the WAL flush. Only for writes whose loss in a crash is harmless
   * *and* that a later synchronous commit depends on: WAL is flushed in order, so that commit
   * makes this write durable too (the idempotency claim before the accepting statement).
   */
  asyncCommit?: boolean;
}

/** Runs an autocommit statement as the named prepared statement `name` (never inside a transaction). */
export async function prepared<T = Record<string, unknown>>(
  db: DataSource,
  name: string,
  text: string,
  params: unknown[],
  options: PreparedOptions = {},
): Promise<T[]> {
  if (sharedSession.has(db)) return rows<T>(db, text, params);
  const pool = options.asyncCommit ? asyncCommitPool(db) : ((db.driver as PostgresDriver).master as Pool);
  const result = await pool.query({ name, text, values: params });
  return result.rows as T[];
}

function asyncCommitPool(db: DataSource): Pool {
  let pool = asyncCommitPools.get(db);
  if (!pool) {
    const master = (db.driver as PostgresDriver).master as Pool;
    const PoolClass = master.constructor as new (config: object) => Pool;
    pool = new PoolClass({ ...master.options, max: 8, options: "-c synchronous_commit=off" });
    asyncCommitPools.set(db, pool);
  }
  return pool;
}

/** Closes the extra pool, if one was opened (the data source closes its own). */
export async function closePreparedPools(db: DataSource): Promise<void> {
  await asyncCommitPools.get(db)?.end();
  asyncCommitPools.delete(db);
}
