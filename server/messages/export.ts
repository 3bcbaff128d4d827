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
// Each row is encoded as pg parses it: rows come as arrays of text (no type parsing, no row
// objects), are never gathered into a result (exportStatements()), and each is appended as one
// CSV line to the current chunk of text, handed out at CHUNK_CHARS. Nothing the export makes
// outlives a young-generation collection or two, so nothing is promoted to V8's old generation,
// where it would stay as garbage until a full collection: in a gateway of this size that comes
// only after tens of MB (docs/performance.md, Export).
//
// Backpressure runs from the HTTP response to the database: the stream below hands the response
// one chunk per read and holds at most the rest of the current batch and the batch read ahead
// while it is written; the next statement runs only once the response has taken both.
import { Readable } from "node:stream";
import type { DataSource } from "typeorm";
import type { ExportMessagesQuery } from "../../contract/index.js";
import pg, { type Pool } from "pg";
import type { PostgresDriver } from "typeorm/driver/postgres/PostgresDriver.js";
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
 * Rows a batch: one statement, its CSV text ~150-350 bytes a row. Larger batches save statements
 * (each costs a plan and a round trip); smaller ones keep what the export holds (the batch being
 * written and the one read ahead) small against the socket's own buffers.
 */
export const EXPORT_BATCH_SIZE = 2_000;

/**
 * Characters a chunk of CSV text: well under V8's large-object size (128 KB), so that a chunk
 * still queued when a young-generation collection comes is copied, not promoted at once to the
 * old generation (which then grows until its next full collection).
 */
const CHUNK_CHARS = 32 * 1024;

/** CSV line end (RFC 4180). */
const CRLF = "\r\n";

/** How many exports are reading now, and how those that ended ended (for tests and operators). */
const counters = { reading: 0, completed: 0, abandoned: 0 };
export function exportCounters(): Readonly<typeof counters> {
  return { ...counters };
}

/** A row as pg hands it over with no type parsing: one text (or null) per column. */
type Cells = (string | null)[];

/** Runs one statement of the export, handing over each row as it arrives; resolves once all have. */
export type ExportStatements = (sql: string, params: unknown[], onRow: (cells: Cells) => void) => Promise<void>;

export interface ExportOptions {
  batchSize?: number;
  /** How the export's statements run; by default exportStatements() (tests wrap it). */
  statements?: ExportStatements;
}

const TEXT_ONLY = { getTypeParser: () => (value: string) => value };

/**
 * The export's statements on the data source's pool: autocommit, rows as arrays of text handed
 * over one by one as pg parses them, never gathered into a result (a pg Query with a row
 * listener and no callback), so that each row is garbage before the next arrives.
 */
export function exportStatements(db: DataSource): ExportStatements {
  const pool = (db.driver as PostgresDriver).master as Pool;
  return async (text, values, onRow) => {
    const client = await pool.connect();
    let failure: Error | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        const config: pg.QueryArrayConfig = { text, values, rowMode: "array", types: TEXT_ONLY };
        const query = client.query(new pg.Query<Cells>(config));
        query.on("row", onRow);
        query.once("error", reject);
        query.once("end", () => resolve());
      });
    } catch (err) {
      failure = err as Error;
      throw err;
    } finally {
      // As pool.query() does: a client whose statement failed is not handed out again.
      client.release(failure);
    }
  };
}

/** One batch: its CSV text, and the position after its last row when the batch was full. */
interface CsvBatch {
  csv: string[];
  next: CursorPosition | undefined;
}

/**
 * The export as a stream of CSV text (header row first). The first batch is read before this
 * resolves, so a database failure at the start is an ordinary error response; a failure later
 * destroys the stream with the error. Destroying the stream (the client went away) stops the
 * reading: no statement starts after it, and at most the read-ahead one finishes.
 */
export async function openMessagesCsv(
  db: DataSource,
  workspaceId: string,
  query: ExportMessagesQuery,
  options: ExportOptions = {},
): Promise<Readable> {
  const batchSize = options.batchSize ?? EXPORT_BATCH_SIZE;
  const run = options.statements ?? exportStatements(db);
  // The window is fixed once, on the database clock that wrote created_at.
  let cutoff = "";
  await run(`SELECT to_char((now() - make_interval(days => $1)) AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT})`, [query.days], (r) => (cutoff = r[0]!));
  const filters = { connection: query.connection, status: query.status, direction: query.direction };
  const readBatch = async (before?: CursorPosition): Promise<CsvBatch> => {
    const { where, params } = messageFilterSql(workspaceId, filters, before);
    params.push(cutoff, batchSize);
    // Instants as UTC timestamps in PostgreSQL's ISO output (what pg itself parses), to the
    // microsecond: millisecondInstant() shortens them for the cells, the last keeps its position.
    const csv: string[] = [];
    let text = "";
    let rows = 0;
    let last: Cells | undefined;
    const onRow = (r: Cells) => {
      text += csvLine(r);
      if (text.length >= CHUNK_CHARS) {
        csv.push(text);
        text = "";
      }
      rows++;
      last = r;
    };
    await run(
      `SELECT m.id,
              m.created_at AT TIME ZONE 'UTC',
              m.updated_at AT TIME ZONE 'UTC',
              c.slug, m.direction, m.status,
              CASE jsonb_typeof(m.recipient)
                WHEN 'string' THEN m.recipient #>> '{}'
                ELSE coalesce(m.recipient ->> 'phone', m.recipient ->> 'group')
              END,
              coalesce(m.sender, CASE WHEN m.direction = 'outbound' THEN c.phone END),
              m.send_at AT TIME ZONE 'UTC',
              m.provider_message_id, m.error_code
         FROM messages m JOIN connections c ON c.id = m.connection_id
        WHERE ${where} AND m.created_at >= $${params.length - 1}::timestamptz
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT $${params.length}`,
      params,
      onRow,
    );
    if (text !== "") csv.push(text);
    const full = rows === batchSize && last !== undefined;
    return { csv, next: full ? { created_at: `${last![1]!.replace(" ", "T")}Z`, id: last![0]! } : undefined };
  };
  const first = await readBatch();
  return csvStream(first, readBatch);
}

/** One row as a line of CSV, in the columns of EXPORT_COLUMNS. */
function csvLine(r: Cells): string {
  return (
    csvCell(r[0]!) + "," + millisecondInstant(r[1]!) + "," + millisecondInstant(r[2]!) + "," + csvCell(r[3]!) + "," + r[4]! + "," +
    csvCell(r[5]!) + "," + csvCell(r[6]!) + "," + csvCell(r[7]!) + "," + (r[8] === null ? "" : millisecondInstant(r[8]!)) + "," +
    csvCell(r[9]!) + "," + csvCell(r[10]!) + CRLF
  );
}

/**
 * `2024-11-22 10:00:00.123456` (a UTC timestamp as PostgreSQL writes it: the fraction's trailing
 * zeros dropped, no fraction at all on a whole second) → `2024-11-22T10:00:00.123Z`, milliseconds
 * truncated as to_char's MS does, like every instant in a JSON response.
 */
function millisecondInstant(ts: string): string {
  const ms = ts.length > 20 ? (ts.slice(20, 23) + "00").slice(0, 3) : "000";
  return ts.slice(0, 10) + "T" + ts.slice(11, 19) + "." + ms + "Z";
}

/**
 * Cells that need no care: empty, or not starting like a formula and holding no comma, double
 * quote, CR or LF; or a phone number in international form. One test covers nearly every cell.
 */
const PLAIN_CELL = /^(?:[^=+\-@\t\r\n",][^",\r\n]*|\+[0-9]+)?$/;
const FORMULA_START = /^[=+\-@\t\r\n]/;
/** A phone number in international form: a plus and digits, nothing a spreadsheet could run. */
const INTERNATIONAL_NUMBER = /^\+[0-9]+$/;
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One cell as CSV text. CSV injection (OWASP): a cell that a spreadsheet would read as a formula
 * (starting with = + - @ tab CR or LF) gets a leading single quote. Phone numbers (`+15550001111`)
 * are left intact: digits cannot call a function or reach another application, and every
 * `to`/`from` would otherwise be altered. Then a cell with a comma, a double quote, CR or LF is
 * quoted, its double quotes doubled (RFC 4180). Null is empty.
 */
function csvCell(value: string | null): string {
  if (value === null) return "";
  if (PLAIN_CELL.test(value)) return value;
  const guarded = FORMULA_START.test(value) && !INTERNATIONAL_NUMBER.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

/**
 * The CSV text of the export as a stream: the header row, then each batch's chunks, one a read.
 * The next batch is read while the current one's chunks are handed over, so the export holds at
 * most what the response has not taken of one batch and the batch read ahead.
 */
function csvStream(first: CsvBatch, readBatch: (before: CursorPosition) => Promise<CsvBatch>): Readable {
  async function* chunks(): AsyncGenerator<string> {
    yield EXPORT_COLUMNS.join(",") + CRLF;
    let batch = first;
    for (;;) {
      const ahead = batch.next ? readBatch(batch.next) : undefined;
      // Handled here so that a read-ahead abandoned with the stream is no unhandled rejection;
      // awaited below.
      ahead?.catch(() => undefined);
      yield* batch.csv;
      if (!ahead) return;
      batch = await ahead;
    }
  }
  // Text stays text down to the socket; a high-water mark of one byte: every chunk waits for the
  // response to ask for it.
  const out = Readable.from(chunks(), { objectMode: false, encoding: "utf8", highWaterMark: 1 });

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

/** `messages-2024-11-22.csv` (UTC date of the export). */
export function exportFileName(now = new Date()): string {
  return `messages-${now.toISOString().slice(0, 10)}.csv`;
}
