// Prefixed, time-sortable identifiers (`msg_01J…`): 48 bits of milliseconds then 80 random bits,
// in Crockford base32 like ULID, so ids sort by creation time and leak nothing else.
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

export type IdPrefix = "wsp" | "usr" | "mem" | "inv" | "ses" | "key" | "msg" | "con" | "sch" | "whe" | "evt" | "del" | "grt" | "aud" | "run" | "occ" | "ocl" | "oag" | "airun";

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let random = "";
  let acc = 0;
  let bits = 0;
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      random += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${random}`;
}
