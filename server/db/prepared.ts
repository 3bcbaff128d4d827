// Named prepared statements for the hot paths (authentication, accepting messages, handing them off
// and applying their reports).
// PostgreSQL plans a named statement once per connection instead of on every call; for the joins
// and multi-CTE statements of these paths that is most of their cost (measured: the API-key
// lookup goes from ~1,200 to ~8,700 a second at 50 concurrent callers). The embedded database's
// one session keeps each client connection's statement names apart (embedded.ts, StatementNames).
import type { DataSource, EntityManager } from "typeorm";
import type { PostgresDriver } from "typeorm/driver/postgres/PostgresDriver.js";
import type { Pool, PoolClient } from "pg";

const sharedSession = new WeakSet<DataSource>();

/** Marks a data source whose server multiplexes clients onto one session (the embedded one). */
export function markSharedSession(db: DataSource): void {
  sharedSession.add(db);
}

/** Whether the data source's server is the embedded one (markSharedSession()). */
export function isSharedSession(db: DataSource): boolean {
  return sharedSession.has(db);
}

/**
 * Runs a statement as the named prepared statement `name`: on the pool when `q` is the data source
 * (autocommit), on the transaction's own connection when it is the entity manager of one. A name
 * stands for one text in the whole process. The result's columns are named, never `*`: a
 * prepared statement whose result changes shape (a migration added a column) is refused by
 * PostgreSQL until its connection closes.
 */
export async function prepared<T = Record<string, unknown>>(
  q: DataSource | EntityManager,
  name: string,
  text: string,
  params: unknown[],
): Promise<T[]> {
  const runner = "driver" in q ? undefined : q.queryRunner;
  const target = runner?.isTransactionActive
    ? (runner as unknown as { databaseConnection: PoolClient }).databaseConnection
    : ((("driver" in q ? q : q.connection).driver as PostgresDriver).master as Pool);
  const result = await target.query({ name, text, values: params });
  return result.rows as T[];
}
