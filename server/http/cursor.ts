// The one cursor codec of every list (docs/decisions.md, "Reads": opaque, signed, newest first).
//
// A cursor is the keyset position of the last item of a page, (created_at, id), bound to the
// filters of the listing that issued it. Layout before base64url:
//
//   version (1 byte) | filter tag (8) | created_at, microseconds since the epoch (int64 BE, 8) | id (UTF-8) | MAC (16)
//
// The MAC is HMAC-SHA256 under deriveKey(SECRET_KEY, "cursor") over everything before it,
// truncated to 128 bits; the filter tag is the same HMAC over the listing's filter fingerprint,
// truncated to 64 bits. created_at keeps microseconds because PostgreSQL does: a millisecond
// position would skip rows created within the same millisecond as a page's last row.
// A 64-character id gives a 130-character cursor, inside the 200-character query limit.
import { deriveKey, hmac, safeEqual } from "../secrets.js";
import { ApiError } from "./errors.js";

export interface CursorPosition {
  /** RFC 3339 UTC instant with up to microsecond precision, e.g. `2024-11-22T10:00:00.123456Z`. */
  created_at: string;
  id: string;
}

const VERSION = 1;
const TAG_BYTES = 8;
const MAC_BYTES = 16;
const HEADER_BYTES = 1 + TAG_BYTES + 8;
/** Ids are at most 64 characters (contract/common.ts `Id`); the bound keeps cursors under 200 characters. */
const MAX_ID_BYTES = 64;

/** The key cursors are signed with: a purpose key derived from SECRET_KEY. */
export function cursorKey(secretKey: Buffer): Buffer {
  return deriveKey(secretKey, "cursor");
}

/**
 * A stable string naming the listing a cursor belongs to: the workspace and each filter, in a
 * fixed key order. Undefined filters are left out, so `{}` and `{status: undefined}` agree.
 */
export function filterFingerprint(scope: string, filters: Record<string, string | number | undefined>): string {
  const entries = Object.entries(filters)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([scope, entries]);
}

export function encodeCursor(key: Buffer, position: CursorPosition, filterFingerprint: string): string {
  const micros = isoToMicros(position.created_at);
  if (micros === undefined) throw new Error(`cursor position has an invalid created_at: ${position.created_at}`);
  return encodeKeyset(key, micros, position.id, filterFingerprint);
}

/** The position a cursor names; 400 `validation_failed` when it is malformed, tampered with or issued for other filters. */
export function decodeCursor(key: Buffer, cursor: string, filterFingerprint: string): CursorPosition {
  const { n, id } = decodeKeyset(key, cursor, filterFingerprint, "cursor");
  return { created_at: microsToIso(n), id };
}

/**
 * The event log's cursors (GET /v1/events): the same layout, with the recording transaction's id
 * (server/events/log.ts) where a list's cursor has created_at. `field` names the query parameter.
 */
export function encodeLogCursor(key: Buffer, position: { tx: string; id: string }, filterFingerprint: string): string {
  return encodeKeyset(key, BigInt(position.tx), position.id, filterFingerprint);
}

export function decodeLogCursor(key: Buffer, cursor: string, filterFingerprint: string, field: string): { tx: string; id: string } {
  const { n, id } = decodeKeyset(key, cursor, filterFingerprint, field);
  return { tx: n.toString(), id };
}

function encodeKeyset(key: Buffer, n: bigint, idText: string, filterFingerprint: string): string {
  const id = Buffer.from(idText, "utf8");
  if (id.length === 0 || id.length > MAX_ID_BYTES) throw new Error("cursor position id must be 1-64 bytes");
  const payload = Buffer.alloc(HEADER_BYTES + id.length);
  payload.writeUInt8(VERSION, 0);
  filterTag(key, filterFingerprint).copy(payload, 1);
  payload.writeBigInt64BE(n, 1 + TAG_BYTES);
  id.copy(payload, HEADER_BYTES);
  return Buffer.concat([payload, mac(key, payload)]).toString("base64url");
}

function decodeKeyset(key: Buffer, cursor: string, filterFingerprint: string, field: string): { n: bigint; id: string } {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalidCursor(field);
  const raw = Buffer.from(cursor, "base64url");
  // Reject non-canonical encodings (trailing bits) so that one position has exactly one cursor.
  if (raw.length < HEADER_BYTES + 1 + MAC_BYTES || raw.length > HEADER_BYTES + MAX_ID_BYTES + MAC_BYTES || raw.toString("base64url") !== cursor) {
    throw invalidCursor(field);
  }
  const payload = raw.subarray(0, raw.length - MAC_BYTES);
  if (!safeEqual(raw.subarray(raw.length - MAC_BYTES), mac(key, payload))) throw invalidCursor(field);
  if (payload.readUInt8(0) !== VERSION) throw invalidCursor(field);
  if (!safeEqual(payload.subarray(1, 1 + TAG_BYTES), filterTag(key, filterFingerprint))) {
    throw invalidCursor(field, "invalid cursor: it was issued for other filters; pass the same filters as for the first page");
  }
  return { n: payload.readBigInt64BE(1 + TAG_BYTES), id: payload.subarray(HEADER_BYTES).toString("utf8") };
}

function invalidCursor(field: string, message = "invalid cursor"): ApiError {
  return new ApiError("validation_failed", message, { errors: [{ path: `query.${field}`, message }] });
}

function mac(key: Buffer, payload: Buffer): Buffer {
  return hmac(key, `mac\n${payload.toString("base64url")}`).subarray(0, MAC_BYTES);
}

function filterTag(key: Buffer, fingerprint: string): Buffer {
  return hmac(key, `filters\n${fingerprint}`).subarray(0, TAG_BYTES);
}

const ISO_UTC = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/;

/** `2024-11-22T10:00:00.123456Z` → microseconds since the epoch; undefined when not that shape. */
export function isoToMicros(iso: string): bigint | undefined {
  const m = ISO_UTC.exec(iso);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1000n + BigInt((m[2] ?? "").padEnd(6, "0"));
}

/** Microseconds since the epoch → `YYYY-MM-DDTHH:MM:SS.ffffffZ` (what PostgreSQL parses exactly). */
export function microsToIso(micros: bigint): string {
  let seconds = micros / 1_000_000n;
  let fraction = micros % 1_000_000n;
  if (fraction < 0n) {
    fraction += 1_000_000n;
    seconds -= 1n;
  }
  const whole = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  return `${whole}.${fraction.toString().padStart(6, "0")}Z`;
}
