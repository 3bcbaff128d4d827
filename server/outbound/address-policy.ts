// The outbound address policy: where the gateway may connect when a tenant or a client gives it a
// URL (webhook endpoints, model vendors' base URLs, media to fetch, OAuth client documents). The
// address classifier, the OUTBOUND_ALLOW_PRIVATE allow-list, and the URL check run when the URL
// is given and again at every request.
//
// Policy (deny by default): an address is allowed only when it is ordinary global unicast. Every
// range below is refused with a named reason; on top of that, anything ipaddr.js does not call
// "unicast" is refused too, and an IPv6 address outside 2000::/3 (the only block IANA hands out as
// global unicast) is refused. So a range missing from our table is still refused if the library
// knows it, and a range missing from the library's table is still refused if it is in ours.
//
// Decisions worth knowing:
// - IPv4-mapped (::ffff:a.b.c.d) and well-known-prefix NAT64 (64:ff9b::a.b.c.d) addresses are
//   judged by the IPv4 address they carry: ::ffff:8.8.8.8 and 64:ff9b::808:808 are allowed,
//   ::ffff:127.0.0.1 and 64:ff9b::a00:1 are not. Local-use NAT64 (64:ff9b:1::/48) is refused: its
//   translator is operator-local and may reach anything.
// - 6to4 (2002::/16) and Teredo (2001::/32) are refused whole rather than decoded: both are
//   deprecated tunnelling schemes that embed an IPv4 address a relay will route to, and no real
//   webhook receiver needs them.
// - IPv4-compatible (::a.b.c.d, ::/96) and IPv4-translated (::ffff:0:a.b.c.d) are refused.
// - Site-local fec0::/10 (deprecated by RFC 3879, but still routed as local by some stacks) is
//   refused.
// - A zone id ("fe80::1%eth0") names a local interface; any scoped address is refused.
// - Only canonical textual addresses are accepted: "2130706433", "0x7f.0.0.1", "017700000001",
//   "127.1" and "010.0.0.1" are "not an IP address" (and so refused). URL hosts written that way are
//   normalized by the WHATWG URL parser to dotted-quad before they get here.
import { promises as dnsPromises } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

export interface Classification {
  allowed: boolean;
  /** Why the address was refused; absent when allowed. */
  reason?: string;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parsed OUTBOUND_ALLOW_PRIVATE (older name WEBHOOK_ALLOW_PRIVATE): CIDR ranges tenant-given URLs may reach although private. */
export interface AllowList {
  readonly ranges: readonly Cidr[];
  /** The ranges as given, normalized (for logs and messages). */
  readonly source: readonly string[];
}

export const EMPTY_ALLOW_LIST: AllowList = Object.freeze({ ranges: Object.freeze([]), source: Object.freeze([]) });

const v4 = (cidr: string): Cidr => ipaddr.IPv4.parseCIDR(cidr);
const v6 = (cidr: string): Cidr => ipaddr.IPv6.parseCIDR(cidr);

/** Cloud metadata endpoints: named separately so the reason says so (all sit inside refused ranges too). */
const METADATA_V4: ReadonlyArray<[string, string]> = [
  ["169.254.169.254", "cloud metadata (AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle)"],
  ["169.254.170.2", "cloud metadata (AWS ECS task credentials)"],
  ["100.100.100.200", "cloud metadata (Alibaba Cloud)"],
  ["192.0.0.192", "cloud metadata (Oracle Cloud, legacy)"],
];
const METADATA_V6: ReadonlyArray<[string, string]> = [["fd00:ec2::254", "cloud metadata (AWS IMDS over IPv6)"]].map(
  ([ip, reason]) => [ipaddr.IPv6.parse(ip!).toString(), reason!] as [string, string],
);

const V4_RULES: ReadonlyArray<[Cidr, string]> = [
  [v4("0.0.0.0/8"), "unspecified / this network (0.0.0.0/8)"],
  [v4("10.0.0.0/8"), "private (10.0.0.0/8)"],
  [v4("100.64.0.0/10"), "carrier-grade NAT (100.64.0.0/10)"],
  [v4("127.0.0.0/8"), "loopback (127.0.0.0/8)"],
  [v4("169.254.0.0/16"), "link-local (169.254.0.0/16)"],
  [v4("172.16.0.0/12"), "private (172.16.0.0/12)"],
  [v4("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"],
  [v4("192.0.2.0/24"), "documentation (192.0.2.0/24)"],
  [v4("192.88.99.0/24"), "6to4 relay anycast, deprecated (192.88.99.0/24)"],
  [v4("192.168.0.0/16"), "private (192.168.0.0/16)"],
  [v4("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"],
  [v4("198.51.100.0/24"), "documentation (198.51.100.0/24)"],
  [v4("203.0.113.0/24"), "documentation (203.0.113.0/24)"],
  [v4("224.0.0.0/4"), "multicast (224.0.0.0/4)"],
  [v4("255.255.255.255/32"), "broadcast (255.255.255.255)"],
  [v4("240.0.0.0/4"), "reserved (240.0.0.0/4)"],
];

const V6_MAPPED = v6("::ffff:0:0/96");
const V6_NAT64 = v6("64:ff9b::/96");
const V6_GLOBAL_UNICAST = v6("2000::/3");

const V6_RULES: ReadonlyArray<[Cidr, string]> = [
  [v6("::/128"), "unspecified (::)"],
  [v6("::1/128"), "loopback (::1)"],
  [v6("::/96"), "IPv4-compatible, deprecated (::/96)"],
  [v6("::ffff:0:0:0/96"), "IPv4-translated (::ffff:0:0:0/96)"],
  [v6("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"],
  [v6("100::/64"), "discard-only (100::/64)"],
  [v6("2001::/32"), "Teredo (2001::/32)"],
  [v6("2001:db8::/32"), "documentation (2001:db8::/32)"],
  [v6("2001::/23"), "IETF special-purpose (2001::/23)"],
  [v6("2002::/16"), "6to4 (2002::/16)"],
  [v6("3fff::/20"), "documentation (3fff::/20)"],
  [v6("5f00::/16"), "segment routing (5f00::/16)"],
  [v6("fc00::/7"), "unique local (fc00::/7)"],
  [v6("fe80::/10"), "link-local (fe80::/10)"],
  [v6("fec0::/10"), "site-local, deprecated (fec0::/10)"],
  [v6("ff00::/8"), "multicast (ff00::/8)"],
];

function matches(addr: ipaddr.IPv4 | ipaddr.IPv6, [net, bits]: Cidr): boolean {
  return addr.kind() === net.kind() && addr.match(net, bits);
}

/** Strips URL-style brackets; returns the bare address and whether a zone id was present. */
function bareAddress(ip: string): { bare: string; zoned: boolean } {
  let s = ip.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  const pct = s.indexOf("%");
  return pct >= 0 ? { bare: s.slice(0, pct), zoned: true } : { bare: s, zoned: false };
}

/**
 * Parses a canonical textual IPv4 or IPv6 address (brackets allowed, zone id ignored); undefined
 * otherwise. IPv6 text is first re-serialized by the WHATWG URL parser (no dotted-quad tail), because
 * ipaddr.js reads the deprecated IPv4-compatible form "::a.b.c.d" as IPv4-mapped ::ffff:a.b.c.d,
 * which is not the address the socket would connect to (inet_pton gives ::a.b.c.d).
 */
function parseStrict(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const { bare } = bareAddress(ip);
  const fam = isIP(bare);
  if (fam === 4) return ipaddr.IPv4.parse(bare);
  if (fam !== 6) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  return ipaddr.IPv6.isValid(canonical) ? ipaddr.IPv6.parse(canonical) : undefined;
}

function classifyV4(addr: ipaddr.IPv4): Classification {
  const text = addr.toString();
  for (const [ip, reason] of METADATA_V4) if (text === ip) return { allowed: false, reason };
  for (const [cidr, reason] of V4_RULES) if (matches(addr, cidr)) return { allowed: false, reason };
  const range = addr.range();
  if (range !== "unicast") return { allowed: false, reason: `special-purpose range (${range})` };
  return { allowed: true };
}

function classifyV6(addr: ipaddr.IPv6): Classification {
  const text = addr.toString();
  for (const [ip, reason] of METADATA_V6) if (text === ip) return { allowed: false, reason };
  if (matches(addr, V6_MAPPED)) return embedded("IPv4-mapped", addr);
  if (matches(addr, V6_NAT64)) return embedded("NAT64", addr);
  for (const [cidr, reason] of V6_RULES) if (matches(addr, cidr)) return { allowed: false, reason };
  if (!matches(addr, V6_GLOBAL_UNICAST)) return { allowed: false, reason: "not global unicast (outside 2000::/3)" };
  const range = addr.range();
  if (range !== "unicast") return { allowed: false, reason: `special-purpose range (${range})` };
  return { allowed: true };
}

/** The IPv4 address in the low 32 bits of an IPv6 address (mapped or NAT64 well-known prefix). */
function low32(addr: ipaddr.IPv6): ipaddr.IPv4 {
  const b = addr.toByteArray();
  return new ipaddr.IPv4(b.slice(12, 16));
}

function embedded(kind: string, addr: ipaddr.IPv6): Classification {
  const inner = low32(addr);
  const c = classifyV4(inner);
  return c.allowed ? c : { allowed: false, reason: `${kind} form of ${inner.toString()}: ${c.reason}` };
}

/**
 * Classifies one IP address for webhook delivery. Accepts canonical IPv4 dotted-quad and IPv6 text
 * (brackets allowed); anything else, and any address with a zone id, is refused.
 */
export function classifyAddress(ip: string): Classification {
  const { zoned } = bareAddress(ip);
  const addr = parseStrict(ip);
  if (!addr) return { allowed: false, reason: "not an IP address" };
  const c = addr.kind() === "ipv4" ? classifyV4(addr as ipaddr.IPv4) : classifyV6(addr as ipaddr.IPv6);
  if (c.allowed && zoned) return { allowed: false, reason: "scoped address (zone id)" };
  return c;
}

/**
 * Parses OUTBOUND_ALLOW_PRIVATE entries ("127.0.0.0/8", "fd00::/8"; a bare address means that one
 * host). Throws on the first invalid entry, naming it, so a bad setting fails at start-up.
 * An IPv4-mapped IPv6 range ("::ffff:10.0.0.0/104") is stored as its IPv4 range.
 */
export function parseAllowList(cidrs: readonly string[]): AllowList {
  const ranges: Cidr[] = [];
  const source: string[] = [];
  for (const raw of cidrs) {
    const entry = raw.trim();
    if (entry === "") continue;
    let cidr: Cidr;
    try {
      const slash = entry.indexOf("/");
      const host = slash >= 0 ? entry.slice(0, slash) : entry;
      const bits = slash >= 0 ? entry.slice(slash + 1) : undefined;
      const addr = host.includes("%") ? undefined : parseStrict(host);
      if (!addr) throw new Error("not an address");
      const max = addr.kind() === "ipv4" ? 32 : 128;
      if (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max)) throw new Error("bad prefix length");
      cidr = [addr, bits === undefined ? max : Number(bits)];
    } catch {
      throw new Error(
        `OUTBOUND_ALLOW_PRIVATE: invalid CIDR ${JSON.stringify(entry)} (expected e.g. "127.0.0.0/8" or "fd00::/8", comma-separated)`,
      );
    }
    const [addr, bits] = cidr;
    if (addr.kind() === "ipv6" && bits >= 96 && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
      cidr = [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    ranges.push(cidr);
    source.push(`${cidr[0].toString()}/${cidr[1]}`);
  }
  return Object.freeze({ ranges: Object.freeze(ranges), source: Object.freeze(source) });
}

/** Splits and parses the raw comma-separated OUTBOUND_ALLOW_PRIVATE value. */
export function parseAllowListEnv(value: string | undefined): AllowList {
  return parseAllowList((value ?? "").split(","));
}

/** Whether `ip` lies in one of the allow-listed ranges (an IPv4-mapped address also by its IPv4 form). */
export function isAllowListed(ip: string, allowList: AllowList): boolean {
  if (allowList.ranges.length === 0) return false;
  const { zoned } = bareAddress(ip);
  if (zoned) return false;
  const addr = parseStrict(ip);
  if (!addr) return false;
  const candidates: Array<ipaddr.IPv4 | ipaddr.IPv6> = [addr];
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    candidates.push((addr as ipaddr.IPv6).toIPv4Address());
  }
  return allowList.ranges.some((range) => candidates.some((c) => matches(c, range)));
}

export const systemLookup: Lookup = async (host) => {
  const found = await dnsPromises.lookup(host, { all: true, verbatim: true });
  return found.map(({ address, family }) => ({ address, family }));
};

/** Why a URL was refused: "dns" is a resolution failure (may be transient); the rest are policy. */
export type UrlRefusal = "invalid_url" | "scheme" | "credentials" | "dns" | "address";

export type UrlCheck =
  | { ok: true; url: URL; addresses: ResolvedAddress[] }
  | { ok: false; reason: string; kind: UrlRefusal };

export interface UrlCheckOptions {
  allowPrivate: AllowList;
  /** Resolver; defaults to dns.promises.lookup(host, {all: true, verbatim: true}). */
  lookup?: Lookup;
}

/**
 * Checks a webhook URL at registration and before each delivery. On success the returned
 * addresses are the ones the delivery must connect to (see safe-request.ts); nothing resolves the
 * host again.
 */
export async function checkWebhookUrl(url: string, opts: UrlCheckOptions): Promise<UrlCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, kind: "invalid_url", reason: "invalid URL" };
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return { ok: false, kind: "scheme", reason: `scheme ${parsed.protocol} not allowed (https only)` };
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return { ok: false, kind: "credentials", reason: "credentials in the URL are not allowed" };
  }
  if (parsed.protocol === "http:" && opts.allowPrivate.ranges.length === 0) {
    return { ok: false, kind: "scheme", reason: "scheme http: not allowed (https only)" };
  }
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (host === "") return { ok: false, kind: "invalid_url", reason: "URL has no host" };

  let addresses: ResolvedAddress[];
  const literal = isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal }];
  } else {
    try {
      addresses = await (opts.lookup ?? systemLookup)(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { ok: false, kind: "dns", reason: `could not resolve ${host}${code ? ` (${code})` : ""}` };
    }
    if (addresses.length === 0) return { ok: false, kind: "dns", reason: `could not resolve ${host} (no addresses)` };
  }

  let allListed = true;
  for (const { address } of addresses) {
    const listed = isAllowListed(address, opts.allowPrivate);
    allListed &&= listed;
    if (listed) continue;
    const c = classifyAddress(address);
    if (!c.allowed) return { ok: false, kind: "address", reason: `${host} resolves to ${address}: ${c.reason}` };
  }
  if (parsed.protocol === "http:" && !allListed) {
    return { ok: false, kind: "scheme", reason: "scheme http: not allowed (https only)" };
  }
  return { ok: true, url: parsed, addresses: addresses.map(({ address, family }) => ({ address, family })) };
}
