// The CSV export of messages (docs/decisions.md, "Messaging"): one row per message of the last `days` days, newest
// first, streamed as it is read. Bodies, media, context and metadata are never exported.
//
// Rows are read in keyset batches (the list's (created_at, id) order and WHERE clause) rather
// than through one long-lived server-side cursor. A cursor keeps an open portal, hence an open
// transaction, for as long as the download lasts; on the embedded database (one backend, one
// transaction at a time) that stops every other query of the gateway until the client has read
// the last byte, and a client that stops reading would stop the gateway. Batches hold no
// connection and no transaction between them, work the same on both databases, and read each
// row exactly once: created_at and id never change, so the position survives concurrent writes.
//
// Each row is written, as one record, to csv-stringify's streaming stringifier (a Transform).
// Backpressure runs from the HTTP response to the database: the response stops reading the
// stream below, which stops reading the stringifier, whose writes then report it full; the
// feeder waits for it to drain, and reads the next batch only once the stringifier has taken the
// whole current one (one batch is read ahead, while the current one is written). The stream
// hands the response everything the stringifier holds at once (`read()` in paused mode), up to
// 64 KB a chunk rather than a chunk per record: a chunk per record costs a stream hop and an HTTP
// chunk per row, which halved the throughput in bench/export.ts.
//
// The batches' statements run through pooledRows() (pg-pool's pool.query) rather than
// db.query(): rows read through pg's promise API were promoted to V8's old generation and filled
// it with garbage up to the next full collection (server/db/pooled.ts). Batches are small for the
// same reason (EXPORT_BATCH_SIZE; docs/performance.md, Export).
import { Readable, type Writable } from "node:stream";
import { stringify, type Stringifier } from "csv-stringify";
import type { DataSource } from "typeorm";
import type { ExportMessagesQuery } from "../../contract/index.js";
import { pooledRows } from "../db/pooled.js";
import type { CursorPosition } from "../http/cursor.js";
import { MICROSECOND_INSTANT } from "../db/instant.js";
import { messageFilterSql } from "./reads.js";

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

/**
 * Rows a batch. A batch's rows live until the last of them is written, and the read-ahead batch
 * as long again: 2,000-row batches outlasted two young-generation collections (one every
 * ~1,500-2,000 rows of an export), so V8 promoted most rows to the old generation, which grew by
 * ~30 MB for 200,000 rows. 500-row batches die young: no growth, same throughput.
 */
export const EXPORT_BATCH_SIZE = 500;

/**
 * What the stringifier's readable side holds before its writes report it full, hence the largest
 * chunk the response is written in. Besides it, an export holds its two batches of rows.
 */
const CSV_CHUNK_BYTES = 64 * 1024;

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

/** Runs one statement of the export and returns its rows. */
export type ExportStatements = <T>(sql: string, params: unknown[]) => Promise<T[]>;

export interface ExportOptions {
  batchSize?: number;
  /** How the export's statements run; by default on the pool with pooledRows() (tests wrap it). */
  statements?: ExportStatements;
}

/**
 * The export as a stream of CSV text (header row first). The first batch is read before this
 * resolves, so a database failure at the start is an ordinary error response; a failure later
 * destroys the stream with the error. Destroying the stream (the client went away) stops the
 * reading: the feeder returns at its next step, after at most the read-ahead batch.
 */
export async function openMessagesCsv(
  db: DataSource,
  workspaceId: string,
  query: ExportMessagesQuery,
  options: ExportOptions = {},
): Promise<Readable> {
  const batchSize = options.batchSize ?? EXPORT_BATCH_SIZE;
  const run: ExportStatements = options.statements ?? ((sql, params) => pooledRows(db, sql, params));
  // The window is fixed once, on the database clock that wrote created_at.
  const [{ cutoff }] = (await run<{ cutoff: string }>(
    `SELECT to_char((now() - make_interval(days => $1)) AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS cutoff`,
    [query.days],
  )) as [{ cutoff: string }];
  const filters = { connection: query.connection, status: query.status, direction: query.direction };
  const readBatch = async (before?: CursorPosition): Promise<RowBatch> => {
    const { where, params } = messageFilterSql(workspaceId, filters, before);
    params.push(cutoff, batchSize);
    const rows = await run<ExportRow>(
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
    const last = rows[rows.length - 1];
    return { rows, full: rows.length === batchSize, last: last && { created_at: last.position, id: last.id } };
  };
  const first = await readBatch();
  return csvStream(first, readBatch);
}

interface RowBatch {
  rows: ExportRow[];
  /** A full batch: there may be more rows after `last`. */
  full: boolean;
  last: CursorPosition | undefined;
}

/**
 * The CSV text of the export: a stringifier fed record by record (feed()), read by a stream that
 * takes all it holds whenever the consumer wants more. Destroying the stream destroys the
 * stringifier, which stops the feeder; a failed batch destroys the stream with the error.
 */
function csvStream(first: RowBatch, readBatch: (before: CursorPosition) => Promise<RowBatch>): Readable {
  const csv = stringify({ record_delimiter: "windows", readableHighWaterMark: CSV_CHUNK_BYTES, encoding: "utf8" });
  let wanted = false;
  let feeding = false;
  const pull = () => {
    while (wanted) {
      // Paused mode: everything the stringifier holds, as one string.
      const chunk = csv.read() as string | null;
      if (chunk === null) return; // "readable" calls again
      wanted = out.push(chunk);
    }
  };
  // Text stays text down to the socket: no second copy of each chunk as a Buffer.
  const out = new Readable({
    encoding: "utf8",
    highWaterMark: 1,
    read() {
      wanted = true;
      // The rows after the first batch are read once the consumer starts reading.
      if (!feeding) {
        feeding = true;
        feed(csv, first, readBatch).catch((err: unknown) => out.destroy(err as Error));
      }
      pull();
    },
    destroy(err, callback) {
      csv.destroy();
      callback(err);
    },
  });
  csv.on("readable", pull);
  csv.once("end", () => out.push(null));
  csv.once("error", (err) => out.destroy(err));

  counters.reading++;
  let settled = false;
  const settle = (completed: boolean) => {
    if (settled) return;
    settled = true;
    counters.reading--;
    if (completed) counters.completed++;
    else counters.abandoned++;
  };
  out.once("end", () => settle(true));
  out.once("close", () => settle(false));
  return out;
}

/** The header row, then every batch's rows, the next batch read while this one is written. */
async function feed(csv: Stringifier, first: RowBatch, readBatch: (before: CursorPosition) => Promise<RowBatch>): Promise<void> {
  csv.write([...EXPORT_COLUMNS]);
  let batch = first;
  for (;;) {
    // Destroyed: the consumer went away while this waited for the stringifier or the database.
    if (csv.destroyed) return;
    const next = batch.full && batch.last ? readBatch(batch.last) : undefined;
    // Handled here so that an abandoned read-ahead is not an unhandled rejection; awaited below.
    next?.catch(() => undefined);
    for (const row of batch.rows) {
      if (csv.destroyed) return;
      if (!csv.write(record(row))) await drained(csv);
    }
    if (!next) break;
    batch = await next;
  }
  if (!csv.destroyed) csv.end();
}

/** Resolves once `stream` takes writes again, or is destroyed. */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed) return resolve();
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
  });
}

/** One record of the export, every cell neutralized. */
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
