// Exact instants in SQL text. Keyset cursors and export positions carry created_at to the
// microsecond (a JavaScript Date keeps milliseconds only), so rows of one millisecond are neither
// skipped nor repeated.

/** to_char pattern of an exact (microsecond) UTC instant, e.g. 2024-11-22T10:00:00.123456Z. */
export const MICROSECOND_INSTANT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;
