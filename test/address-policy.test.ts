// The webhook address policy: a table of IPv4/IPv6 edge cases for the classifier (both sides of
// every boundary), the OUTBOUND_ALLOW_PRIVATE allow-list, and checkWebhookUrl with an injected
// resolver. Nothing here touches the network or the test gateway.
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../server/config.js";
import {
  EMPTY_ALLOW_LIST,
  checkWebhookUrl,
  classifyAddress,
  isAllowListed,
  parseAllowList,
  parseAllowListEnv,
} from "../server/outbound/address-policy.js";
import { fakeLookup } from "./support/lookup.js";

const ALLOW = true;
const DENY = false;

/** [address, allowed, substring of the reason when refused]. */
const TABLE: ReadonlyArray<[string, boolean, string?]> = [
  // --- IPv4: public unicast
  ["1.1.1.1", ALLOW],
  ["8.8.8.8", ALLOW],
  ["93.184.216.34", ALLOW],
  // 0.0.0.0/8
  ["0.0.0.0", DENY, "unspecified"],
  ["0.255.255.255", DENY, "unspecified"],
  ["1.0.0.0", ALLOW],
  // 10/8
  ["9.255.255.255", ALLOW],
  ["10.0.0.0", DENY, "private (10.0.0.0/8)"],
  ["10.255.255.255", DENY, "private"],
  ["11.0.0.0", ALLOW],
  // 100.64/10 CGNAT (and Alibaba's metadata inside it)
  ["100.63.255.255", ALLOW],
  ["100.64.0.0", DENY, "carrier-grade NAT"],
  ["100.100.100.200", DENY, "Alibaba"],
  ["100.127.255.255", DENY, "carrier-grade NAT"],
  ["100.128.0.0", ALLOW],
  // 127/8
  ["126.255.255.255", ALLOW],
  ["127.0.0.0", DENY, "loopback"],
  ["127.0.0.1", DENY, "loopback"],
  ["127.255.255.255", DENY, "loopback"],
  ["128.0.0.0", ALLOW],
  // 169.254/16 link-local and metadata
  ["169.253.255.255", ALLOW],
  ["169.254.0.0", DENY, "link-local"],
  ["169.254.169.254", DENY, "cloud metadata"],
  ["169.254.170.2", DENY, "cloud metadata"],
  ["169.254.255.255", DENY, "link-local"],
  ["169.255.0.0", ALLOW],
  // 172.16/12
  ["172.15.255.255", ALLOW],
  ["172.16.0.0", DENY, "private (172.16.0.0/12)"],
  ["172.31.255.255", DENY, "private"],
  ["172.32.0.0", ALLOW],
  // 192.0.0/24, 192.0.2/24
  ["191.255.255.255", ALLOW],
  ["192.0.0.0", DENY, "IETF protocol assignments"],
  ["192.0.0.192", DENY, "cloud metadata"],
  ["192.0.0.255", DENY, "IETF protocol assignments"],
  ["192.0.1.0", ALLOW],
  ["192.0.2.0", DENY, "documentation"],
  ["192.0.2.255", DENY, "documentation"],
  ["192.0.3.0", ALLOW],
  ["192.88.99.1", DENY, "6to4 relay"],
  // 192.168/16
  ["192.167.255.255", ALLOW],
  ["192.168.0.0", DENY, "private (192.168.0.0/16)"],
  ["192.168.255.255", DENY, "private"],
  ["192.169.0.0", ALLOW],
  // 198.18/15 benchmarking
  ["198.17.255.255", ALLOW],
  ["198.18.0.0", DENY, "benchmarking"],
  ["198.19.255.255", DENY, "benchmarking"],
  ["198.20.0.0", ALLOW],
  // 198.51.100/24, 203.0.113/24 documentation
  ["198.51.99.255", ALLOW],
  ["198.51.100.0", DENY, "documentation"],
  ["198.51.100.255", DENY, "documentation"],
  ["198.51.101.0", ALLOW],
  ["203.0.112.255", ALLOW],
  ["203.0.113.0", DENY, "documentation"],
  ["203.0.113.255", DENY, "documentation"],
  ["203.0.114.0", ALLOW],
  // ranges only ipaddr.js's table names (AS112, AMT): refused by the library layer
  ["192.31.196.1", DENY, "special-purpose range (as112)"],
  ["192.52.193.1", DENY, "special-purpose range (amt)"],
  // 224/4 multicast, 240/4 reserved, broadcast
  ["223.255.255.255", ALLOW],
  ["224.0.0.0", DENY, "multicast"],
  ["239.255.255.255", DENY, "multicast"],
  ["240.0.0.0", DENY, "reserved"],
  ["255.255.255.254", DENY, "reserved"],
  ["255.255.255.255", DENY, "broadcast"],
  // non-canonical IPv4 text is not an address here (URL parsing normalizes such hosts first)
  ["2130706433", DENY, "not an IP address"],
  ["0x7f.0.0.1", DENY, "not an IP address"],
  ["017700000001", DENY, "not an IP address"],
  ["0x7f000001", DENY, "not an IP address"],
  ["127.1", DENY, "not an IP address"],
  ["010.0.0.1", DENY, "not an IP address"],
  ["08.8.8.8", DENY, "not an IP address"],
  ["256.0.0.1", DENY, "not an IP address"],
  ["1.2.3.4.5", DENY, "not an IP address"],
  ["example.com", DENY, "not an IP address"],
  ["", DENY, "not an IP address"],

  // --- IPv6: public unicast
  ["2606:4700:4700::1111", ALLOW],
  ["2001:4860:4860::8888", ALLOW],
  ["[2606:4700:4700::1111]", ALLOW],
  ["2000::1", ALLOW],
  ["2003::1", ALLOW],
  // unspecified, loopback, IPv4-compatible (::/96)
  ["::", DENY, "unspecified"],
  ["::1", DENY, "loopback"],
  ["[::1]", DENY, "loopback"],
  ["0:0:0:0:0:0:0:1", DENY, "loopback"],
  ["::2", DENY, "IPv4-compatible"],
  ["::a00:1", DENY, "IPv4-compatible"],
  // ipaddr.js alone would read "::a.b.c.d" as IPv4-mapped (and so allow ::8.8.8.8); the socket reads ::a.b.c.d
  ["::8.8.8.8", DENY, "IPv4-compatible"],
  ["::127.0.0.1", DENY, "IPv4-compatible"],
  ["::ffff:0:8.8.8.8", DENY, "IPv4-translated"],
  // IPv4-mapped: judged by the embedded IPv4 address
  ["::ffff:127.0.0.1", DENY, "IPv4-mapped form of 127.0.0.1: loopback"],
  ["::ffff:7f00:1", DENY, "IPv4-mapped form of 127.0.0.1"],
  ["0:0:0:0:0:ffff:7f00:1", DENY, "IPv4-mapped"],
  ["[::ffff:7f00:1]", DENY, "IPv4-mapped"],
  ["::ffff:10.0.0.1", DENY, "private"],
  ["::ffff:169.254.169.254", DENY, "cloud metadata"],
  ["::ffff:0.0.0.0", DENY, "unspecified"],
  ["::ffff:8.8.8.8", ALLOW],
  ["::ffff:0:7f00:1", DENY, "IPv4-translated"],
  // NAT64: the well-known prefix is judged by the embedded address; the local-use one is refused
  ["64:ff9b::a00:1", DENY, "NAT64 form of 10.0.0.1: private"],
  ["64:ff9b::10.0.0.1", DENY, "NAT64 form of 10.0.0.1"],
  ["64:ff9b::7f00:1", DENY, "loopback"],
  ["64:ff9b::a9fe:a9fe", DENY, "cloud metadata"],
  ["64:ff9b::808:808", ALLOW],
  ["64:ff9b::1:808:808", DENY, "not global unicast"],
  ["64:ff9b:1::808:808", DENY, "local-use NAT64"],
  // link-local fe80::/10 (fe80–febf), with and without a zone id
  ["fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "not global unicast"],
  ["fe80::", DENY, "link-local"],
  ["fe80::1", DENY, "link-local"],
  ["fe80::1%eth0", DENY, "link-local"],
  ["febf:ffff::", DENY, "link-local"],
  ["2606:4700:4700::1111%eth0", DENY, "zone id"],
  // site-local fec0::/10, deprecated: refused
  ["fec0::", DENY, "site-local"],
  ["feff:ffff::1", DENY, "site-local"],
  // unique local fc00::/7, AWS metadata inside it
  ["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "not global unicast"],
  ["fc00::", DENY, "unique local"],
  ["fd00:ec2::254", DENY, "cloud metadata"],
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "unique local"],
  // multicast
  ["ff00::", DENY, "multicast"],
  ["ff02::1", DENY, "multicast"],
  // documentation
  ["2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ALLOW],
  ["2001:db8::", DENY, "documentation"],
  ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "documentation"],
  ["2001:db9::", ALLOW],
  ["3fff::1", DENY, "documentation (3fff::/20)"],
  ["3fff:1000::1", ALLOW],
  // discard-only 100::/64
  ["100::", DENY, "discard"],
  ["100::ffff:ffff:ffff:ffff", DENY, "discard"],
  ["100:0:0:1::", DENY, "not global unicast"],
  // 2001::/23 IETF special, Teredo 2001::/32 inside it
  ["2001::1", DENY, "Teredo"],
  ["2001:0:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "Teredo"],
  ["2001:1::1", DENY, "IETF special-purpose"],
  ["2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "IETF special-purpose"],
  ["2001:200::1", ALLOW],
  // 6to4: refused whole, whatever it embeds
  ["2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ALLOW],
  ["2002::", DENY, "6to4"],
  ["2002:c0a8:101::1", DENY, "6to4"],
  ["2002:808:808::1", DENY, "6to4"],
  ["2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "6to4"],
  ["2003::", ALLOW],
  // outside 2000::/3, and ranges named only by ipaddr.js
  ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", DENY, "not global unicast"],
  ["4000::1", DENY, "not global unicast"],
  ["5f00::1", DENY, "segment routing"],
  ["2620:4f:8000::1", DENY, "special-purpose range (as112v6)"],
  // malformed
  ["::ffff:127.0.0.1.1", DENY, "not an IP address"],
  ["2001:db8::g", DENY, "not an IP address"],
  ["[::1", DENY, "not an IP address"],
];

describe("webhook address policy: classifyAddress", () => {
  it(`covers at least 50 IPv4 and IPv6 edge cases (${TABLE.length})`, () => {
    expect(TABLE.length).to.be.at.least(50);
    expect(new Set(TABLE.map(([ip]) => ip)).size, "no duplicate rows").to.equal(TABLE.length);
  });

  for (const [ip, allowed, reason] of TABLE) {
    it(`${allowed ? "allows" : "refuses"} ${JSON.stringify(ip)}${reason ? ` (${reason})` : ""}`, () => {
      const c = classifyAddress(ip);
      expect(c.allowed, JSON.stringify(c)).to.equal(allowed);
      if (allowed) expect(c.reason).to.equal(undefined);
      else expect(c.reason).to.be.a("string").that.includes(reason ?? "");
    });
  }
});

describe("outbound address policy: OUTBOUND_ALLOW_PRIVATE (older name WEBHOOK_ALLOW_PRIVATE)", () => {
  it("reads OUTBOUND_ALLOW_PRIVATE, and WEBHOOK_ALLOW_PRIVATE only when the new name is unset", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-gateway-config-"));
    const ranges = (env: Record<string, string>) => loadConfig({ NODE_ENV: "test", DATA_DIR: dataDir, ...env }).webhooks.allowPrivate.source;
    expect(ranges({ OUTBOUND_ALLOW_PRIVATE: "10.0.0.0/8" })).to.deep.equal(["10.0.0.0/8"]);
    expect(ranges({ WEBHOOK_ALLOW_PRIVATE: "192.168.0.0/16" })).to.deep.equal(["192.168.0.0/16"]);
    expect(ranges({ OUTBOUND_ALLOW_PRIVATE: "10.0.0.0/8", WEBHOOK_ALLOW_PRIVATE: "192.168.0.0/16" })).to.deep.equal(["10.0.0.0/8"]);
    expect(ranges({})).to.deep.equal([]);
    expect(() => ranges({ OUTBOUND_ALLOW_PRIVATE: "10.0.0.0/33" })).to.throw(/OUTBOUND_ALLOW_PRIVATE: invalid CIDR/);
  });

  it("parses CIDRs and bare addresses, trimming and skipping empty entries", () => {
    const list = parseAllowList([" 127.0.0.0/8 ", "", "fd00::/8", "192.168.1.10", "::1"]);
    expect(list.source).to.deep.equal(["127.0.0.0/8", "fd00::/8", "192.168.1.10/32", "::1/128"]);
    expect(parseAllowListEnv("10.0.0.0/8, ::1/128,").source).to.deep.equal(["10.0.0.0/8", "::1/128"]);
    expect(parseAllowListEnv(undefined).ranges).to.have.length(0);
  });

  for (const bad of ["10.0.0.0/33", "::1/129", "not-a-cidr", "10.0.0/8", "010.0.0.0/8", "127.0.0.1/", "/8", "10.0.0.0/8/8", "10.0.0.0/x"]) {
    it(`throws a clear error at config time for ${JSON.stringify(bad)}`, () => {
      expect(() => parseAllowList(["127.0.0.0/8", bad])).to.throw(Error, `OUTBOUND_ALLOW_PRIVATE: invalid CIDR ${JSON.stringify(bad)}`);
    });
  }

  it("matches addresses of the listed ranges only, an IPv4-mapped address by its IPv4 form", () => {
    const list = parseAllowList(["127.0.0.0/8", "fd00::/8"]);
    expect(isAllowListed("127.0.0.1", list)).to.equal(true);
    expect(isAllowListed("127.255.255.255", list)).to.equal(true);
    expect(isAllowListed("128.0.0.0", list)).to.equal(false);
    expect(isAllowListed("::ffff:127.0.0.1", list)).to.equal(true);
    expect(isAllowListed("fd12::1", list)).to.equal(true);
    expect(isAllowListed("::1", list)).to.equal(false);
    expect(isAllowListed("fd12::1%eth0", list), "zone id").to.equal(false);
    expect(isAllowListed("not-an-ip", list)).to.equal(false);
    expect(isAllowListed("10.0.0.1", parseAllowList(["10.0.0.0/8"]))).to.equal(true);
    expect(isAllowListed("127.0.0.1", parseAllowList(["10.0.0.0/8"]))).to.equal(false);
    expect(isAllowListed("127.0.0.1", EMPTY_ALLOW_LIST)).to.equal(false);
    // an IPv4-mapped range is stored as its IPv4 range
    const mapped = parseAllowList(["::ffff:10.0.0.0/104"]);
    expect(mapped.source).to.deep.equal(["10.0.0.0/8"]);
    expect(isAllowListed("10.1.2.3", mapped)).to.equal(true);
    // NAT64 forms are not admitted by an IPv4 range: they go to a translator, not the listed host
    expect(isAllowListed("64:ff9b::a00:1", parseAllowList(["10.0.0.0/8"]))).to.equal(false);
  });
});

describe("webhook address policy: checkWebhookUrl", () => {
  const lookup = fakeLookup({
    "hooks.example.test": ["93.184.216.34"],
    "v6.example.test": ["2606:4700:4700::1111", "93.184.216.34"],
    "internal.example.test": ["10.0.0.5"],
    "mixed.example.test": ["93.184.216.34", "10.0.0.5"],
    "mixed6.example.test": ["2606:4700:4700::1111", "::1"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
    "metadata.example.test": ["169.254.169.254"],
    localhost: ["127.0.0.1"],
    "dual-localhost.test": ["::1", "127.0.0.1"],
    "empty.example.test": [],
  });
  const none = { allowPrivate: EMPTY_ALLOW_LIST, lookup };

  beforeEach(() => lookup.calls.splice(0));

  it("accepts https to a public host and returns the addresses it resolved to", async () => {
    const r = await checkWebhookUrl("https://hooks.example.test/webhooks?x=1", none);
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(r.url.href).to.equal("https://hooks.example.test/webhooks?x=1");
    expect(r.addresses).to.deep.equal([{ address: "93.184.216.34", family: 4 }]);
    expect(lookup.calls).to.deep.equal(["hooks.example.test"]);
    const v6 = await checkWebhookUrl("https://v6.example.test/", none);
    expect(v6.ok && v6.addresses).to.deep.equal([
      { address: "2606:4700:4700::1111", family: 6 },
      { address: "93.184.216.34", family: 4 },
    ]);
  });

  it("refuses http without asking the resolver, and other schemes", async () => {
    for (const url of ["http://hooks.example.test/", "ftp://hooks.example.test/", "file:///etc/passwd", "javascript:alert(1)", "ws://hooks.example.test/"]) {
      const r = await checkWebhookUrl(url, none);
      expect(r, url).to.deep.include({ ok: false, kind: "scheme" });
    }
    expect(lookup.calls).to.deep.equal([]);
  });

  it("refuses URLs that do not parse", async () => {
    for (const url of ["not a url", "https://", "https://exa mple.test/", ""]) {
      const r = await checkWebhookUrl(url, none);
      expect(r, url).to.deep.include({ ok: false, kind: "invalid_url" });
    }
  });

  it("refuses credentials in the URL", async () => {
    for (const url of ["https://user:pass@hooks.example.test/", "https://user@hooks.example.test/", "https://:pass@hooks.example.test/"]) {
      expect(await checkWebhookUrl(url, none), url).to.deep.include({ ok: false, kind: "credentials" });
    }
    expect(lookup.calls).to.deep.equal([]);
  });

  it("refuses a host resolving to a private address, and to one public and one private address", async () => {
    const internal = await checkWebhookUrl("https://internal.example.test/", none);
    expect(internal).to.deep.include({ ok: false, kind: "address" });
    expect(!internal.ok && internal.reason).to.include("10.0.0.5").and.include("private");
    for (const host of ["mixed.example.test", "mixed6.example.test", "mapped.example.test", "metadata.example.test"]) {
      expect(await checkWebhookUrl(`https://${host}/`, none), host).to.deep.include({ ok: false, kind: "address" });
    }
  });

  it("refuses localhost like its address", async () => {
    expect(await checkWebhookUrl("https://localhost/hook", none)).to.deep.include({ ok: false, kind: "address" });
    // with the system resolver too (localhost is answered locally, no network involved)
    const sys = await checkWebhookUrl("https://localhost:8443/hook", { allowPrivate: EMPTY_ALLOW_LIST });
    expect(sys.ok).to.equal(false);
    expect(!sys.ok && sys.reason).to.match(/loopback/);
  });

  it("refuses an unresolvable host, or one with no addresses, as a DNS failure", async () => {
    const r = await checkWebhookUrl("https://nowhere.example.test/", none);
    expect(r).to.deep.include({ ok: false, kind: "dns" });
    expect(!r.ok && r.reason).to.include("ENOTFOUND");
    expect(await checkWebhookUrl("https://empty.example.test/", none)).to.deep.include({ ok: false, kind: "dns" });
  });

  it("uses literal IPs as they are: WHATWG-normalized decimal, octal and hex forms of 127.0.0.1 are refused", async () => {
    for (const host of ["2130706433", "0x7f.0.0.1", "017700000001", "0x7f000001", "127.1", "0177.0.0.1", "127.0.0.1"]) {
      const url = `https://${host}/hook`;
      expect(new URL(url).hostname, url).to.equal("127.0.0.1");
      const r = await checkWebhookUrl(url, none);
      expect(r, url).to.deep.include({ ok: false, kind: "address" });
      expect(!r.ok && r.reason, url).to.include("127.0.0.1").and.include("loopback");
    }
    for (const url of ["https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://[0:0:0:0:0:ffff:7f00:1]/", "https://[64:ff9b::a00:1]/", "https://[fd00:ec2::254]/", "https://169.254.169.254/latest/meta-data/", "https://0/", "https://0.0.0.0/"]) {
      expect(await checkWebhookUrl(url, none), url).to.deep.include({ ok: false, kind: "address" });
    }
    expect(lookup.calls, "literals are not resolved").to.deep.equal([]);

    const v4 = await checkWebhookUrl("https://8.8.8.8/hook", none);
    expect(v4.ok && v4.addresses).to.deep.equal([{ address: "8.8.8.8", family: 4 }]);
    const v6 = await checkWebhookUrl("https://[2606:4700:4700::1111]:8443/hook", none);
    expect(v6.ok && v6.addresses).to.deep.equal([{ address: "2606:4700:4700::1111", family: 6 }]);
    const nat64 = await checkWebhookUrl("https://[64:ff9b::8.8.8.8]/", none);
    expect(nat64.ok && nat64.addresses).to.deep.equal([{ address: "64:ff9b::808:808", family: 6 }]);
  });

  it("lets an allow-listed private address through, with http allowed for it", async () => {
    const loopback = { allowPrivate: parseAllowList(["127.0.0.0/8"]), lookup };
    for (const url of ["http://127.0.0.1:3000/hook", "https://127.0.0.1:3000/hook", "http://localhost:3000/hook", "http://2130706433/"]) {
      const r = await checkWebhookUrl(url, loopback);
      expect(r.ok, url).to.equal(true);
      expect(r.ok && r.addresses).to.deep.equal([{ address: "127.0.0.1", family: 4 }]);
    }
  });

  it("does not stretch the allow-list: other ranges, partly listed hosts and http to public hosts stay refused", async () => {
    const tens = { allowPrivate: parseAllowList(["10.0.0.0/8"]), lookup };
    expect(await checkWebhookUrl("http://127.0.0.1/", tens)).to.deep.include({ ok: false, kind: "address" });
    expect(await checkWebhookUrl("https://localhost/", tens)).to.deep.include({ ok: false, kind: "address" });
    expect((await checkWebhookUrl("https://internal.example.test/", tens)).ok).to.equal(true);
    // http is only for addresses that are all allow-listed, even when the rest are public
    expect(await checkWebhookUrl("http://mixed.example.test/", tens)).to.deep.include({ ok: false, kind: "scheme" });
    expect(await checkWebhookUrl("http://hooks.example.test/", tens)).to.deep.include({ ok: false, kind: "scheme" });
    expect((await checkWebhookUrl("https://mixed.example.test/", tens)).ok).to.equal(true);
    // a host with one listed and one unlisted private address is refused
    const v4only = { allowPrivate: parseAllowList(["127.0.0.0/8"]), lookup };
    expect(await checkWebhookUrl("http://dual-localhost.test/", v4only)).to.deep.include({ ok: false, kind: "address" });
    const both = { allowPrivate: parseAllowList(["127.0.0.0/8", "::1/128"]), lookup };
    expect((await checkWebhookUrl("http://dual-localhost.test/", both)).ok).to.equal(true);
  });
});
