// A DNS resolver over a fixed table, for the webhook address-policy tests.
import type { Lookup, ResolvedAddress } from "../../server/outbound/address-policy.js";

/** A resolver over a fixed table that counts its calls. */
export function fakeLookup(table: Record<string, string[]>): Lookup & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string): Promise<ResolvedAddress[]> => {
    calls.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(fn, { calls });
}
