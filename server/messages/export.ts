// The CSV export of messages (docs/decisions.md, "Reads"): one row per message of the last `days`
// days, newest first, streamed as it is read. Bodies, media, context and metadata are never
// exported.
//
// Rows are read in keyset batches (the list's (created_at, id) order and WHERE clause) rather
// than through one long-lived statement. A statement open for the whole download holds a pooled
// connection and a snapshot for as long as the client takes; on the embedded database (one
// backend, one transaction at a time) it would stop every other query of the gateway until the
// client has read the last byte, and a client that stops reading would stop the gateway. Batches
// hold no connection and no transaction between them and read each row exactly once: created_at
// and id never change, so the position survives concurrent writes.
//
// On PostgreSQL each batch is one `COPY (SELECT ...) TO STDOUT WITH (FORMAT csv)`: the database
// writes the CSV (quoting, doubled quotes) in C, far cheaper than a row of the ordinary protocol
// parsed into strings, and each row arrives as one protocol message holding one line.
// The line is copied byte for byte into the current output Buffer, changing only what the
// export's format wants and PostgreSQL's CSV does not give: CRLF line ends, instants in
// milliseconds, the formula guard, an empty string as an empty cell rather than `""`. No row
// becomes a string or an object: the export allocates a Buffer per CHUNK_BYTES of output,
// outside V8's heap, and nothing it makes lives long enough to be promoted to the old generation
// (docs/performance.md, Export).
//
// The embedded database answers COPY too, but slower than a SELECT, and it makes garbage enough
// in the process that hosts it for a full collection every few batches (docs/performance.md,
// Export): there each batch is a SELECT whose rows come as arrays of text, handed over one by one
// as pg parses them (never gathered into a result), each appended as one CSV line to a chunk of
// text. Both paths write the same bytes (test/messages-read.test.ts compares them).
//
// Backpressure runs from the HTTP response to the database: the stream below hands the response
// one chunk per read and holds at most the rest of the current batch and the batch read ahead
// while it is written; the next statement runs only once the response has taken both.
import { Readable, type Writable } from "node:stream";
import type { DataSource } from "typeorm";
import type { ExportMessagesQuery } from "../../contract/index.js";
import pg, { escapeLiteral, type Pool, type PoolClient, type Submittable } from "pg";
import type { PostgresDriver } from "typeorm/driver/postgres/PostgresDriver.js";
import type { CursorPosition } from "../http/cursor.js";
import { MICROSECOND_INSTANT } from "../db/instant.js";
import { isSharedSession } from "../db/prepared.js";
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
 * Rows a batch: one statement, its CSV ~150-350 bytes a row. Larger batches save statements
 * (each costs a plan and a round trip); smaller ones keep what the export holds (the batch being
 * written and the one read ahead) small against the socket's own buffers.
 */
export const EXPORT_BATCH_SIZE = 5_000;
/**
 * Rows a batch on the embedded database's path: its engine, in this process, hands a statement's
 * rows over once it has them all, so a batch is held whole in this heap (300,000 rows promoted 77-91 MB
 * in batches of 5,000, 25 MB in batches of 2,000, in the old-generation test).
 */
export const ROWS_PATH_BATCH_SIZE = 2_000;

/** Bytes an output Buffer: one socket write each. */
const CHUNK_BYTES = 64 * 1024;

/**
 * One export's output Buffers, reused: a Buffer goes back once the response has written it (see
 * CsvStream.pipe), so a download allocates the few the batch being written, the batch read
 * ahead and the socket's queue hold at once, however many rows it has. Fresh Buffers that nobody
 * gives back instead would be garbage outside V8's heap, promoted with their small JS objects
 * whenever they outlive two young-generation collections, and freed only by a full collection
 * (docs/performance.md, Export).
 */
class BufferPool {
  private free: Buffer[] = [];
  private readonly own = new WeakSet<ArrayBufferLike>();
  take(): Buffer {
    const taken = this.free.pop();
    if (taken) return taken;
    const made = Buffer.allocUnsafeSlow(CHUNK_BYTES);
    this.own.add(made.buffer);
    return made;
  }
  /** `chunk`: any chunk of the stream; a view of a Buffer of take() gives back the whole Buffer. */
  give(chunk: Buffer | string): void {
    if (typeof chunk !== "string" && this.own.has(chunk.buffer)) this.free.push(Buffer.from(chunk.buffer, 0, CHUNK_BYTES));
  }
}

/** How many exports are reading now, and how those that ended ended (for tests and operators). */
const counters = { reading: 0, completed: 0, abandoned: 0 };
export function exportCounters(): Readonly<typeof counters> {
  return { ...counters };
}

/**
 * Runs one COPY ... TO STDOUT of the export, handing over each row as it arrives: one line of
 * PostgreSQL's CSV, LF-terminated, valid only during the call (it may be a view of the driver's
 * buffer). Resolves once all have.
 */
export type ExportStatements = (sql: string, onLine: (line: Buffer) => void) => Promise<void>;

/** A row as pg hands it over with no type parsing: one text (or null) per column. */
type Cells = (string | null)[];

/** Runs one SELECT of the export, handing over each row as it arrives; resolves once all have. */
export type RowStatements = (sql: string, params: unknown[], onRow: (cells: Cells) => void) => Promise<void>;

export interface ExportOptions {
  batchSize?: number;
  /** COPY (PostgreSQL's default) or rows (the embedded database's default); tests compare them. */
  path?: "copy" | "rows";
  /** How the COPY statements run; by default exportStatements() (tests wrap it). */
  statements?: ExportStatements;
  /** How the row statements run; by default rowStatements() (tests wrap it). */
  rowStatements?: RowStatements;
}

/** One statement on a client of the data source's pool, autocommit. */
async function onPooledClient(db: DataSource, statement: (client: PoolClient) => Promise<void>): Promise<void> {
  const client = await ((db.driver as PostgresDriver).master as Pool).connect();
  let failure: Error | undefined;
  try {
    await statement(client);
  } catch (err) {
    failure = err as Error;
    throw err;
  } finally {
    // As pool.query() does: a client whose statement failed is not handed out again.
    client.release(failure);
  }
}

const TEXT_ONLY = { getTypeParser: () => (value: string) => value };

/**
 * The export's SELECTs: rows as arrays of text handed over one by one as pg parses them, never
 * gathered into a result (a pg Query with a row listener and no callback), so that each row is
 * garbage before the next arrives.
 */
export function rowStatements(db: DataSource): RowStatements {
  return (text, values, onRow) =>
    onPooledClient(
      db,
      (client) =>
        new Promise<void>((resolve, reject) => {
          const config: pg.QueryArrayConfig = { text, values, rowMode: "array", types: TEXT_ONLY };
          const query = client.query(new pg.Query<Cells>(config));
          query.on("row", onRow);
          query.once("error", reject);
          query.once("end", () => resolve());
        }),
    );
}

/**
 * The export's statements on the data source's pool, autocommit. A COPY takes no bind
 * parameters, so its values are inlined as literals (pg's escapeLiteral) by the caller.
 */
export function exportStatements(db: DataSource): ExportStatements {
  return (text, onLine) => onPooledClient(db, (client) => new Promise<void>((resolve, reject) => client.query(copyOut(text, onLine, resolve, reject))));
}

/**
 * A COPY TO STDOUT as a pg submittable (the interface pg-cursor and pg-query-stream use): pg's
 * own parser splits the stream into messages, and each CopyData message is one row. Settles on
 * ReadyForQuery, or on the first error (pg reports a lost connection the same way).
 */
function copyOut(text: string, onLine: (line: Buffer) => void, resolve: () => void, reject: (err: Error) => void): Submittable {
  let settled = false;
  let failure: Error | undefined;
  const settle = (err?: Error) => {
    if (settled) return;
    settled = true;
    if (err) reject(err);
    else resolve();
  };
  return {
    submit: (connection) => connection.query(text),
    handleCopyData: (msg: { chunk: Buffer }) => {
      if (failure) return;
      try {
        onLine(msg.chunk);
      } catch (err) {
        // Read on to ReadyForQuery so the connection stays usable; fail once there.
        failure = err as Error;
      }
    },
    handleReadyForQuery: () => settle(failure),
    handleError: (err: Error) => settle(err),
    handleCommandComplete: () => undefined,
    handleRowDescription: () => undefined,
    handleDataRow: () => undefined,
    handleEmptyQuery: () => undefined,
    handlePortalSuspended: () => undefined,
  } as Submittable;
}

/** One batch: its CSV, and the position after its last row when the batch was full. */
interface CsvBatch {
  /** Buffers (COPY) or text (rows). */
  csv: (Buffer | string)[];
  next: CursorPosition | undefined;
}

/** `$1`… of messageFilterSql() replaced by their values as literals (COPY takes no parameters). */
function inlineParams(sql: string, params: unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => escapeLiteral(String(params[Number(n) - 1])));
}

/**
 * The export as a stream of CSV (header row first), as Buffers. The first batch is read before
 * this resolves, so a database failure at the start is an ordinary error response; a failure
 * later destroys the stream with the error. Destroying the stream (the client went away) stops
 * the reading: no statement starts after it, and at most the read-ahead one finishes.
 */
export async function openMessagesCsv(
  db: DataSource,
  workspaceId: string,
  query: ExportMessagesQuery,
  options: ExportOptions = {},
): Promise<Readable> {
  const path = options.path ?? (isSharedSession(db) ? "rows" : "copy");
  const batchSize = options.batchSize ?? (path === "rows" ? ROWS_PATH_BATCH_SIZE : EXPORT_BATCH_SIZE);
  // The window is fixed once, on the database clock that wrote created_at.
  const [window] = (await db.query(`SELECT to_char((now() - make_interval(days => $1)) AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS cutoff`, [
    query.days,
  ])) as { cutoff: string }[];
  const filters = { connection: query.connection, status: query.status, direction: query.direction };
  const pool = new BufferPool();
  const connection = await connectionColumns(db, workspaceId);
  const select = (where: string, cutoff: string, limit: string) => `SELECT m.id,
              m.created_at AT TIME ZONE 'UTC',
              m.updated_at AT TIME ZONE 'UTC',
              ${connection.slug}, m.direction, m.status,
              CASE jsonb_typeof(m.recipient)
                WHEN 'string' THEN m.recipient #>> '{}'
                ELSE coalesce(m.recipient ->> 'phone', m.recipient ->> 'group')
              END,
              coalesce(m.sender, CASE WHEN m.direction = 'outbound' THEN ${connection.phone} END),
              m.send_at AT TIME ZONE 'UTC',
              m.provider_message_id, m.error_code
         FROM ${connection.from}
        WHERE ${where} AND m.created_at >= ${cutoff}::timestamptz
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT ${limit}`;
  const readRows = async (before?: CursorPosition): Promise<CsvBatch> => {
    const { where, params } = messageFilterSql(workspaceId, filters, before);
    params.push(window!.cutoff, batchSize);
    const encoder = new TextRowEncoder(batchSize);
    await (options.rowStatements ?? rowStatements(db))(select(where, `$${params.length - 1}`, `$${params.length}`), params, (r) => encoder.row(r));
    return encoder.finish();
  };
  const readCopy = async (before?: CursorPosition): Promise<CsvBatch> => {
    const { where, params } = messageFilterSql(workspaceId, filters, before);
    const encoder = new CsvEncoder(batchSize, pool);
    // Instants as UTC timestamps in PostgreSQL's ISO output, to the microsecond: the encoder
    // shortens them for the cells and keeps the last row's whole as the next batch's position.
    await (options.statements ?? exportStatements(db))(
      `COPY (${select(inlineParams(where, params), escapeLiteral(window!.cutoff), String(batchSize))}) TO STDOUT WITH (FORMAT csv)`,
      (line) => encoder.line(line),
    );
    return { csv: encoder.finish(), next: encoder.last };
  };
  const readBatch = path === "copy" ? readCopy : readRows;
  const first = await readBatch();
  return csvStream(first, readBatch, pool, path === "rows");
}

/**
 * Up to this many connections in the workspace, the export's statements carry each connection's
 * slug and number as literals instead of joining connections for every row: the join cost the
 * database ~30 % of a batch (planning ~1.0 → 0.56 ms, running 4.7 → 3.5 ms for 5,000 rows).
 */
const INLINE_CONNECTIONS = 32;

/** How the export's statements read a message's connection slug and number, and from what. */
async function connectionColumns(db: DataSource, workspaceId: string): Promise<{ slug: string; phone: string; from: string }> {
  // Deleted connections too: their messages are exported with the slug they had.
  const known = (await db.query(`SELECT id, slug, phone FROM connections WHERE workspace_id = $1 LIMIT ${INLINE_CONNECTIONS + 1}`, [workspaceId])) as {
    id: string;
    slug: string;
    phone: string | null;
  }[];
  if (known.length > INLINE_CONNECTIONS) return { slug: "c.slug", phone: "c.phone", from: "messages m JOIN connections c ON c.id = m.connection_id" };
  // A connection made after this (its messages may still fall in a batch) is looked up as it comes.
  const byConnection = (column: "slug" | "phone") => {
    const lookup = `(SELECT ${column} FROM connections WHERE id = m.connection_id)`;
    if (known.length === 0) return lookup;
    const cases = known.map((c) => `WHEN ${escapeLiteral(c.id)} THEN ${c[column] === null ? "NULL" : escapeLiteral(c[column])}`).join(" ");
    return `CASE m.connection_id ${cases} ELSE ${lookup} END`;
  };
  return { slug: byConnection("slug"), phone: byConnection("phone"), from: "messages m" };
}

const COMMA = 0x2c;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LF = 0x0a;
const CR = 0x0d;
const T = 0x54;
const Z = 0x5a;

/**
 * First bytes of a cell that a spreadsheet would read as a formula (= + - @ tab CR LF): such a
 * cell gets a leading single quote (CSV injection, OWASP), except a phone number in international
 * form (a plus and digits: nothing a spreadsheet could run, and every `to`/`from` would otherwise
 * be altered).
 */
const FORMULA_START = new Uint8Array(256);
for (const c of "=+-@\t\r\n") FORMULA_START[c.charCodeAt(0)] = 1;

/** Columns (of EXPORT_COLUMNS) that hold an instant; the others are text. */
const INSTANT = EXPORT_COLUMNS.map((c) => c === "created_at" || c === "updated_at" || c === "send_at");

/**
 * PostgreSQL's CSV lines (one a row, in EXPORT_COLUMNS) rewritten into the export's, into Buffers
 * of CHUNK_BYTES. Text cells: PostgreSQL has quoted those with a comma, a double quote, CR or LF,
 * doubling their quotes (RFC 4180); the guard's quote goes first inside those quotes, as if the
 * cell had been guarded then quoted; an empty string (`""`) becomes an empty cell, as NULL is.
 * Instant cells: `2024-11-22 10:00:00.123456` (the fraction's trailing zeros dropped, none on a
 * whole second) → `2024-11-22T10:00:00.123Z`, truncated as to_char's MS does, like every instant in
 * a JSON response.
 */
class CsvEncoder {
  private chunks: Buffer[] = [];
  private out: Buffer;
  private at = 0;
  private rows = 0;
  /** The position after the batch's last row, once it has `batchSize` rows. */
  last: CursorPosition | undefined;

  constructor(
    private readonly batchSize: number,
    private readonly pool: BufferPool,
  ) {
    this.out = pool.take();
  }

  line(line: Buffer): void {
    const end = line.length - 1; // the LF
    // The line grows by at most 5 bytes an instant (a whole second gains `.000Z`, `T` replaces a
    // space), 1 a text cell (the guard's quote) and the CR.
    if (this.at + end + 32 > this.out.length) {
      if (this.at > 0) this.chunks.push(this.out.subarray(0, this.at));
      this.out = end + 32 > CHUNK_BYTES ? Buffer.allocUnsafe(end + 32) : this.pool.take();
      this.at = 0;
    }
    const out = this.out;
    let o = this.at;
    let i = 0;
    for (let column = 0; column < INSTANT.length; column++) {
      if (column > 0) {
        out[o++] = COMMA;
        i++; // past the comma
      }
      if (i >= end || line[i] === COMMA) continue; // NULL: empty
      if (INSTANT[column]) {
        if (column === 1 && ++this.rows === this.batchSize) this.last = position(line, i);
        // YYYY-MM-DD, T, HH:MM:SS, the fraction to three digits, Z.
        for (let k = 0; k < 10; k++) out[o++] = line[i + k]!;
        out[o++] = T;
        for (let k = 11; k < 19; k++) out[o++] = line[i + k]!;
        out[o++] = DOT;
        let j = i + 19;
        let digits = 0;
        if (line[j] === DOT) {
          for (j++; j < end && line[j] !== COMMA; j++) {
            if (digits < 3) out[o + digits++] = line[j]!;
          }
        }
        for (; digits < 3; digits++) out[o + digits] = ZERO;
        o += 3;
        out[o++] = Z;
        i = j;
      } else if (line[i] === QUOTE) {
        // Quoted by PostgreSQL: the content starts after the quote and ends at a quote that is
        // not doubled. A phone number is never quoted, so only the first byte decides the guard.
        let j = i + 1;
        for (;;) {
          if (line[j] === QUOTE) {
            if (line[j + 1] !== QUOTE) break;
            j++;
          }
          j++;
        }
        if (j > i + 1) {
          out[o++] = QUOTE;
          if (FORMULA_START[line[i + 1]!]) out[o++] = APOSTROPHE;
          for (let k = i + 1; k <= j; k++) out[o++] = line[k]!;
        }
        i = j + 1;
      } else {
        let j = i;
        while (j < end && line[j] !== COMMA) j++;
        if (FORMULA_START[line[i]!] && !internationalNumber(line, i, j)) out[o++] = APOSTROPHE;
        for (let k = i; k < j; k++) out[o++] = line[k]!;
        i = j;
      }
    }
    out[o++] = CR;
    out[o++] = LF;
    this.at = o;
  }

  finish(): Buffer[] {
    if (this.at > 0) this.chunks.push(this.out.subarray(0, this.at));
    else this.pool.give(this.out);
    return this.chunks;
  }
}

/** `+` and one or more digits, from `start` to `end`. */
function internationalNumber(line: Buffer, start: number, end: number): boolean {
  if (line[start] !== PLUS || end - start < 2) return false;
  for (let k = start + 1; k < end; k++) if (line[k]! < ZERO || line[k]! > NINE) return false;
  return true;
}

/**
 * The keyset position of a line: its id (the first cell; an id never needs quoting) and its
 * created_at to the microsecond (the cell at `at`), as the list's cursors have it.
 */
function position(line: Buffer, at: number): CursorPosition {
  let end = at;
  while (line[end] !== COMMA) end++;
  return { created_at: `${line.toString("latin1", at, end).replace(" ", "T")}Z`, id: line.toString("utf8", 0, at - 1) };
}

/**
 * Rows as arrays of text (the embedded database's path) into CSV, in chunks of CHUNK_CHARS
 * characters (under V8's large-object size, so that a chunk still queued at a young-generation
 * collection is copied, not promoted), handed out as text: the same bytes as CsvEncoder. Text,
 * not Buffers: Buffers made per chunk are garbage outside V8's heap, and in the process that also
 * hosts the embedded database they brought a full collection into every export of the test.
 */
class TextRowEncoder {
  private csv: string[] = [];
  private text = "";
  private rows = 0;
  private last: Cells | undefined;

  constructor(private readonly batchSize: number) {}

  row(r: Cells): void {
    this.text += csvLine(r);
    if (this.text.length >= CHUNK_CHARS) {
      this.csv.push(this.text);
      this.text = "";
    }
    this.rows++;
    this.last = r;
  }

  finish(): CsvBatch {
    if (this.text !== "") this.csv.push(this.text);
    const last = this.rows === this.batchSize ? this.last : undefined;
    return { csv: this.csv, next: last ? { created_at: `${last[1]!.replace(" ", "T")}Z`, id: last[0]! } : undefined };
  }
}

const CHUNK_CHARS = 32 * 1024;

/** One row as a line of CSV, in the columns of EXPORT_COLUMNS. */
function csvLine(r: Cells): string {
  return (
    csvCell(r[0]!) + "," + millisecondInstant(r[1]!) + "," + millisecondInstant(r[2]!) + "," + csvCell(r[3]!) + "," + csvCell(r[4]!) + "," +
    csvCell(r[5]!) + "," + csvCell(r[6]!) + "," + csvCell(r[7]!) + "," + (r[8] === null ? "" : millisecondInstant(r[8]!)) + "," +
    csvCell(r[9]!) + "," + csvCell(r[10]!) + "\r\n"
  );
}

/** CsvEncoder's instant cells, from text. */
function millisecondInstant(ts: string): string {
  const ms = ts.length > 20 ? (ts.slice(20, 23) + "00").slice(0, 3) : "000";
  return ts.slice(0, 10) + "T" + ts.slice(11, 19) + "." + ms + "Z";
}

/** Cells that need no care: empty, or not starting like a formula and holding no comma, double quote, CR or LF; or a phone number. */
const PLAIN_CELL = /^(?:[^=+\-@\t\r\n",][^",\r\n]*|\+[0-9]+)?$/;
const FORMULA = /^[=+\-@\t\r\n]/;
const INTERNATIONAL_NUMBER = /^\+[0-9]+$/;
const NEEDS_QUOTES = /[",\r\n]/;

/** CsvEncoder's text cells, from text: the formula guard (FORMULA_START), then RFC 4180 quoting; null is empty. */
function csvCell(value: string | null): string {
  if (value === null) return "";
  if (PLAIN_CELL.test(value)) return value;
  const guarded = FORMULA.test(value) && !INTERNATIONAL_NUMBER.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

const HEADER = Buffer.from(EXPORT_COLUMNS.join(",") + "\r\n");

/**
 * The CSV of the export as a stream of Buffers (COPY) or text (rows): the header row, then each batch's chunks, one a
 * read. The next batch is read while the current one's chunks are handed over, so the export
 * holds at most what the response has not taken of one batch and the batch read ahead.
 */
class CsvStream extends Readable {
  private pulling = false;

  constructor(
    private readonly chunks: AsyncGenerator<Buffer | string>,
    private readonly pool: BufferPool,
    encoding: "utf8" | undefined,
  ) {
    // A high-water mark of one byte: every chunk waits for the response to ask for it. With an
    // encoding, text stays text down to the socket (the rows path).
    super({ highWaterMark: 1, encoding });
  }

  override _read(): void {
    if (this.pulling) return;
    this.pulling = true;
    this.chunks.next().then(
      ({ value, done }) => {
        this.pulling = false;
        if (this.destroyed) return;
        if (done) this.push(null);
        else if (this.push(value)) this._read();
      },
      (err: Error) => this.destroy(err),
    );
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    // Ends the generator at its next yield: no statement starts after that.
    void this.chunks.return(undefined);
    callback(err);
  }

  /**
   * What Readable.pipe() does for the response (ts-rest sends a stream body with `pipe`), plus
   * each written chunk's Buffer back to the pool: only a write's callback says the socket has
   * taken the bytes. Teardown is the caller's, as with pipe(): the handler destroys this stream
   * when the response closes and the response when this stream fails.
   */
  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    const dest = destination as unknown as Writable;
    const resume = () => this.resume();
    this.on("data", (chunk: Buffer | string) => {
      const taken = dest.write(chunk, (err) => {
        if (!err) this.pool.give(chunk);
      });
      if (!taken) {
        this.pause();
        dest.once("drain", resume);
      }
    });
    if (options?.end !== false) this.once("end", () => dest.end());
    return destination;
  }
}

function csvStream(first: CsvBatch, readBatch: (before: CursorPosition) => Promise<CsvBatch>, pool: BufferPool, text: boolean): Readable {
  async function* chunks(): AsyncGenerator<Buffer | string> {
    yield HEADER;
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
  const out = new CsvStream(chunks(), pool, text ? "utf8" : undefined);

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
