// Prefixed, time-sortable identifiers (`msg_01J…`): 48 bits of milliseconds then 80 random bits,
// in Crockford base32 like ULID, so ids sort by creation time and leak nothing else.
//
// Monotonic within a process, as ULID's monotonic mode: an id made in the same millisecond as the
// previous one takes its random part plus one, so two events recorded one after the other sort in
// that order even when they share a millisecond (docs/decisions.md, "Ids: monotonic per process").
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const RANDOM_MAX = (1n << 80n) - 1n;

export type IdPrefix = "wsp" | "usr" | "mem" | "inv" | "ses" | "key" | "msg" | "con" | "sch" | "whe" | "evt" | "del" | "grt" | "aud" | "run" | "occ" | "ocl" | "oag" | "airun";

let lastMs = -1;
let lastRandom = 0n;

function encode(value: bigint, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let random: bigint;
  if (now === lastMs && lastRandom < RANDOM_MAX) {
    random = lastRandom + 1n;
  } else {
    random = BigInt(`0x${randomBytes(10).toString("hex")}`);
  }
  lastMs = now;
  lastRandom = random;
  return `${prefix}_${encode(BigInt(now), 10)}${encode(random, 16)}`;
}
