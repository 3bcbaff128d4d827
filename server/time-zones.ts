// Time zone names, as the API takes them (a send's timezone, a schedule's zone): one rule for both.
import { IANAZone } from "luxon";

/**
 * Whether `name` is an IANA time zone name the runtime knows ("UTC", "Europe/London",
 * backward-compatible links such as "US/Eastern"). Offsets ("+02:00", "UTC+2") and ICU's
 * non-IANA "SystemV/…" ids are refused. Matching is case-insensitive, as in Intl.
 */
/**
 * Whether `name` is an IANA time zone name the runtime knows ("UTC", "Europe/London",
 * backward-compatible links such as "US/Eastern"). Offsets ("+02:00", "UTC+2") and ICU's
 * non-IANA "SystemV/…" ids are refused. Matching is case-insensitive, as in Intl.
 */
export function isValidTimeZone(name: string): boolean {
  if (typeof name !== "string" || name.length === 0 || name.length > 64) return false;
  if (/^[+-]/.test(name) || /^systemv\//i.test(name)) return false;
  return IANAZone.isValidZone(name);
}

