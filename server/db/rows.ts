// TypeORM's `query()` on PostgreSQL returns `[rows, affectedCount]` for a statement whose command
// is UPDATE or DELETE (including `WITH … DELETE`), and plain rows for everything else. Statements
// that return rows go through `rows()`, which always yields the rows.
import type { DataSource, EntityManager } from "typeorm";

export async function rows<T = Record<string, unknown>>(q: DataSource | EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await q.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === "number") return result[0] as T[];
  return result as T[];
}
