// API key format: `svc_live_` or `svc_test_`, 32 base62 characters of randomness (~190 bits), then
// a 6-character checksum so typos and truncations are refused without a database lookup and
// secret scanners can recognise a real key.
import { createHash, randomInt } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
export const KEY_PATTERN = /^svc_(live|test)_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

export type KeyEnvironment = "live" | "test";

export function generateApiKey(environment: KeyEnvironment): string {
  let body = "";
  for (let i = 0; i < BODY_LENGTH; i++) body += BASE62[randomInt(62)];
  return `svc_${environment}_${body}${checksum(body)}`;
}

export function parseApiKey(key: string): { environment: KeyEnvironment } | null {
  const m = KEY_PATTERN.exec(key);
  if (!m || checksum(m[2]!) !== m[3]) return null;
  return { environment: m[1] as KeyEnvironment };
}

/** What lists show: the environment prefix and the first 8 characters, enough to tell keys apart. */
export function keyPrefix(key: string): string {
  return key.slice(0, "svc_live_".length + 8);
}

function checksum(body: string): string {
  let n = createHash("sha256").update(body).digest().readUInt32BE(0);
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}
