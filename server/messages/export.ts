// The CSV export of messages (spec 4.1): one row per message of the last `days` days, newest
// first, streamed as it is read. Bodies, media, context and metadata are never exported.
//
// Rows are read in keyset batches (the list's (created_at, id) order and WHERE clause) rather
// than through one long-lived server-side cursor. A cursor keeps an open portal, hence an open
// transaction, for as long as the download lasts; on the embedded database (one backend, one
// transaction at a time) that stops every other query of the gateway until the client has read
// the last byte, and a client that stops reading would stop the gateway. Batches hold no
// connection and no transaction between them, work the same on both databases, and read each
// row exactly once: created_at and id never change, so the position survives concurrent writes.
// The next batch is fetched while the current one is written, and only when the client reads:
// the HTTP response's backpressure reaches the database. Each batch is formatted as one chunk of
// CSV text: writing record by record costs a stream hop and an HTTP chunk per row, which halved
// the throughput in bench/export.ts.
import { Readable } from "node:stream";
import { stringify, type Options as CsvOptions } from "csv-stringify/sync";
import type { DataSource } from "typeorm";
import type { ExportMessagesQuery } from "../../contract/index.js";
import type { CursorPosition } from "../http/cursor.js";
import { MICROSECOND_INSTANT, messageFilterSql } from "./reads.js";

export const EXPORT_COLUMNS = [
  "id",
  "created_at",
  "updated_at",
  "connection",
  "direction",
  "status",
  "to",
  "from",
  "send_at",
  "provider_message_id",
  "error_code",
] as const;

export const EXPORT_BATCH_SIZE = 2000;

/** Millisecond UTC instants, as in every JSON response. */
const INSTANT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

interface ExportRow {
  id: string;
  position: string;
  created_at: string;
  updated_at: string;
  connection: string;
  direction: string;
  status: string;
  to: string | null;
  from: string | null;
  send_at: string | null;
  provider_message_id: string | null;
  error_code: string | null;
}

/** How many exports are reading now, and how those that ended ended (for tests and operators). */
const counters = { reading: 0, completed: 0, abandoned: 0 };
export function exportCounters(): Readonly<typeof counters> {
  return { ...counters };
}

/**
 * The export as a stream of CSV text (header row first). The first batch is read before this
 * resolves, so a database failure at the start is an ordinary error response; a failure later
 * destroys the stream with the error. Destroying the stream (the client went away) stops the
 * reading: the generator returns at its next step, after at most the read-ahead batch.
 */
export async function openMessagesCsv(
  db: DataSource,
  workspaceId: string,
  query: ExportMessagesQuery,
  options: { batchSize?: number } = {},
): Promise<Readable> {
  const batchSize = options.batchSize ?? EXPORT_BATCH_SIZE;
  // The window is fixed once, on the database clock that wrote created_at.
  const [{ cutoff }] = (await db.query(
    `SELECT to_char((now() - make_interval(days => $1)) AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS cutoff`,
    [query.days],
  )) as [{ cutoff: string }];
  const filters = { connection: query.connection, status: query.status, direction: query.direction };
  const readBatch = async (before?: CursorPosition): Promise<CsvBatch> => {
    const { where, params } = messageFilterSql(workspaceId, filters, before);
    params.push(cutoff, batchSize);
    const rows: ExportRow[] = await db.query(
      `SELECT m.id,
              to_char(m.created_at AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS position,
              to_char(m.created_at AT TIME ZONE 'UTC', ${INSTANT}) AS created_at,
              to_char(m.updated_at AT TIME ZONE 'UTC', ${INSTANT}) AS updated_at,
              c.slug AS connection, m.direction, m.status,
              CASE jsonb_typeof(m.recipient)
                WHEN 'string' THEN m.recipient #>> '{}'
                ELSE coalesce(m.recipient ->> 'phone', m.recipient ->> 'group')
              END AS "to",
              coalesce(m.sender, CASE WHEN m.direction = 'outbound' THEN c.phone END) AS "from",
              to_char(m.send_at AT TIME ZONE 'UTC', ${INSTANT}) AS send_at,
              m.provider_message_id, m.error_code
         FROM messages m JOIN connections c ON c.id = m.connection_id
        WHERE ${where} AND m.created_at >= $${params.length - 1}::timestamptz
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT $${params.length}`,
      params,
    );
    // Formatted and encoded at once, so a batch waiting for the client is one buffer outside the
    // heap rather than its row objects. (The heap still grows during a long export: V8 defers full
    // collections while garbage is cheap to keep. With --max-old-space-size=128 a 1,000,000-row
    // export peaks 11 MB over the idle process at the same speed; see bench/export.ts.)
    const last = rows[rows.length - 1];
    return {
      text: Buffer.from(rows.length ? stringify(rows.map(record), CSV) : "", "utf8"),
      full: rows.length === batchSize,
      last: last && { created_at: last.position, id: last.id },
    };
  };
  const first = await readBatch();
  // highWaterMark 1 byte: hold no finished chunk beyond the one being written (plus the read-ahead).
  return Readable.from(csvChunks(first, readBatch), { objectMode: false, highWaterMark: 1 });
}

const CSV: CsvOptions = { record_delimiter: "windows" };

interface CsvBatch {
  text: Buffer;
  /** A full batch: there may be more rows after `last`. */
  full: boolean;
  last: CursorPosition | undefined;
}

/** The header row, then one chunk of CSV text per batch, the next batch read while this one is written. */
async function* csvChunks(first: CsvBatch, readBatch: (before: CursorPosition) => Promise<CsvBatch>): AsyncGenerator<Buffer | string> {
  counters.reading++;
  let finished = false;
  try {
    yield stringify([[...EXPORT_COLUMNS]], CSV);
    let batch = first;
    for (;;) {
      const next = batch.full && batch.last ? readBatch(batch.last) : undefined;
      // Handled here so that an abandoned read-ahead is not an unhandled rejection; awaited below.
      next?.catch(() => undefined);
      if (batch.text.length) yield batch.text;
      if (!next) break;
      batch = await next;
    }
    finished = true;
  } finally {
    counters.reading--;
    if (finished) counters.completed++;
    else counters.abandoned++;
  }
}

function record(r: ExportRow): (string | null)[] {
  return [r.id, r.created_at, r.updated_at, r.connection, r.direction, r.status, r.to, r.from, r.send_at, r.provider_message_id, r.error_code].map(
    neutralizeFormula,
  );
}

const FORMULA_START = /^[=+\-@\t\r\n]/;
/** A phone number in international form: a plus and digits, nothing a spreadsheet could run. */
const INTERNATIONAL_NUMBER = /^\+[0-9]+$/;

/**
 * CSV injection (OWASP): a cell that a spreadsheet would read as a formula gets a leading single
 * quote. Phone numbers (`+15550001111`) are left intact: digits cannot call a function or reach
 * another application, and every `to`/`from` would otherwise be altered.
 */
export function neutralizeFormula(value: string | null): string | null {
  if (value === null || !FORMULA_START.test(value) || INTERNATIONAL_NUMBER.test(value)) return value;
  return `'${value}`;
}

/** `messages-2024-11-22.csv` (UTC date of the export). */
export function exportFileName(now = new Date()): string {
  return `messages-${now.toISOString().slice(0, 10)}.csv`;
}
