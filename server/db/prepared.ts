// Named prepared statements for the hot paths (authentication, accepting messages).
// PostgreSQL plans a named statement once per connection instead of on every call; for the joins
// and multi-CTE statements of these paths that is most of their cost (measured: the API-key
// lookup goes from ~1,200 to ~8,700 a second at 50 concurrent callers). The embedded database's
// one session keeps each client connection's statement names apart (embedded.ts, StatementNames).
import type { DataSource } from "typeorm";
import type { PostgresDriver } from "typeorm/driver/postgres/PostgresDriver.js";
import type { Pool } from "pg";

const sharedSession = new WeakSet<DataSource>();

/** Marks a data source whose server multiplexes clients onto one session (the embedded one). */
export function markSharedSession(db: DataSource): void {
  sharedSession.add(db);
}

/** Whether the data source's server is the embedded one (markSharedSession()). */
export function isSharedSession(db: DataSource): boolean {
  return sharedSession.has(db);
}

/** Runs an autocommit statement as the named prepared statement `name` (never inside a transaction). */
export async function prepared<T = Record<string, unknown>>(
  db: DataSource,
  name: string,
  text: string,
  params: unknown[],
): Promise<T[]> {
  const pool = (db.driver as PostgresDriver).master as Pool;
  const result = await pool.query({ name, text, values: params });
  return result.rows as T[];
}
