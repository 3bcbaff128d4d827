// The event outbox read as an append-only log, in (tx, id) order: the recording transaction's id,
// then the event's. Only events of transactions older than the oldest one still running are read
// (the "horizon"), so an event can never commit behind a position a reader has passed: what a
// reader has seen once is a prefix of everything that will ever be there (migration EventSinks).
// Brokers' sinks and GET /v1/events both read it this way.

/** SQL: the horizon, below which every transaction has finished (committed or rolled back). */
export const LOG_HORIZON = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/** A position in the log: after the event (tx, id). tx travels as a decimal string (bigint). */
export interface LogPosition {
  tx: string;
  id: string;
}

/**
 * SQL condition on `events` (aliased `alias`): after the position in parameters $n, $n+1, and
 * (`settled`) below the horizon. The horizon is the server's: a write transaction running in any
 * database of the PostgreSQL server holds it back, so readers wait for it (docs/events.md).
 */
export function afterPosition(n: number, alias = "events", settled = true): string {
  return `(${alias}.tx, ${alias}.id) > ($${n}::bigint, $${n + 1}::text)${settled ? ` AND ${alias}.tx < ${LOG_HORIZON}` : ""}`;
}

/** SQL ordering of the log. */
export const LOG_ORDER = "tx, id";

/** The start of the log, before every event. */
export const LOG_START: LogPosition = { tx: "-1", id: "" };
