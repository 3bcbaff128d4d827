// Prefixed, time-sortable identifiers (`msg_01J…`): 48 bits of milliseconds then 80 random bits,
// in Crockford base32 like ULID, so ids sort by creation time and leak nothing else.
//
// Monotonic within a process, as ULID's monotonic mode: an id made in the same millisecond as the
// previous one takes its random part plus one, so two events recorded one after the other sort in
// that order even when they share a millisecond (docs/decisions.md, "Ids: monotonic per process").
//
// An id is on every request's path (several per accepted message): the random bytes come from a
// pooled buffer refilled 4 KB at a time rather than a call into the system's generator each, and
// the 80 random bits are kept as two 40-bit numbers (exact in a double) instead of a BigInt.
import { randomFillSync } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const HALF = 2 ** 40;

export type IdPrefix = "wsp" | "usr" | "mem" | "inv" | "ses" | "key" | "msg" | "con" | "sch" | "whe" | "evt" | "del" | "grt" | "aud" | "run" | "occ" | "ocl" | "oag" | "airun";

const pool = Buffer.allocUnsafe(4096);
let poolAt = pool.length;

/** `bytes` random bytes from the pool, as base64url (request ids, the sandbox's ids): never for a secret. */
export function randomBase64url(bytes: number): string {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const text = pool.toString("base64url", poolAt, poolAt + bytes);
  poolAt += bytes;
  return text;
}

/** 40 random bits from the pool, as a number. */
function random40(): number {
  if (poolAt + 5 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const value = pool.readUIntBE(poolAt, 5);
  poolAt += 5;
  return value;
}

let lastMs = -1;
let lastHigh = 0;
let lastLow = 0;

/** `length` base32 digits of a non-negative integer below 2^53, most significant first. */
function encode(value: number, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[value % 32]! + out;
    value = Math.floor(value / 32);
  }
  return out;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let high: number;
  let low: number;
  if (now === lastMs && !(lastHigh === HALF - 1 && lastLow === HALF - 1)) {
    // The previous random part plus one, carried from the low 40 bits into the high ones.
    low = lastLow + 1;
    high = lastHigh;
    if (low === HALF) {
      low = 0;
      high++;
    }
  } else {
    high = random40();
    low = random40();
  }
  lastMs = now;
  lastHigh = high;
  lastLow = low;
  return `${prefix}_${encode(now, 10)}${encode(high, 8)}${encode(low, 8)}`;
}
