// Webhook delivery over real local sockets: the host is resolved once (by an injected resolver,
// to 127.0.0.1, allow-listed as WEBHOOK_ALLOW_PRIVATE would be in development) and the connection
// goes to that address while Host, SNI and certificate checks use the hostname. Only loopback is
// ever contacted. Independent of the test gateway.
import { expect } from "chai";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { parseAllowList, type Lookup } from "../server/outbound/address-policy.js";
import { WebhookDeliveryError, deliverWebhook, postToCheckedAddress } from "../server/outbound/safe-request.js";
import { fakeLookup } from "./support/lookup.js";

// A self-signed certificate for some-name.test (valid 2000–2100), for the TLS cases.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1v433Y+a/r9577y/
wJ+MYyI07pRhM3SVJizQeWhjKhShRANCAAR15OKNqAepGlSFyhow1xJsyoKXLOwq
y7U3yYHW2eHTN7jvL4thRy3cdE0OxLirNWafDqF4cC6yi49hFPwrTrIF
-----END PRIVATE KEY-----
`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBjjCCATWgAwIBAgIBATAKBggqhkjOPQQDAjAZMRcwFQYDVQQDDA5zb21lLW5h
bWUudGVzdDAgFw0wMDAxMDEwMDAwMDBaGA8yMTAwMDEwMTAwMDAwMFowGTEXMBUG
A1UEAwwOc29tZS1uYW1lLnRlc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR1
5OKNqAepGlSFyhow1xJsyoKXLOwqy7U3yYHW2eHTN7jvL4thRy3cdE0OxLirNWaf
DqF4cC6yi49hFPwrTrIFo2wwajAZBgNVHREEEjAQgg5zb21lLW5hbWUudGVzdDAM
BgNVHRMBAf8EAjAAMAsGA1UdDwQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATAd
BgNVHQ4EFgQUXmT2f93og4KdxQucpjdA/tZ2BzwwCgYIKoZIzj0EAwIDRwAwRAIg
GE9sKYJVKG5zOHbWrIMX9nqRVEYPWAV00snh/vMPYLkCIEVL29pPjI3b8UcHSY4A
q27xH5irnR4rnFsDnl7VXBwa
-----END CERTIFICATE-----
`;

interface Hit {
  path: string;
  host: string | undefined;
  body: string;
  headers: http.IncomingHttpHeaders;
  servername?: string | false;
}

/** A loopback receiver: /hook answers 204, /redirect 302 → /target, /hang never answers, /big streams 5 MB and never ends. */
function receiver(server: http.Server) {
  const hits: Hit[] = [];
  const big = { closedByClient: false, bytesWritten: 0 };
  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "";
      const tlsSocket = req.socket as { servername?: string | false };
      hits.push({ path, host: req.headers.host, body: Buffer.concat(chunks).toString(), headers: req.headers, servername: tlsSocket.servername });
      if (path === "/hook") {
        res.writeHead(204).end();
      } else if (path === "/redirect") {
        res.writeHead(302, { location: "/target" }).end("moved");
      } else if (path === "/target") {
        res.writeHead(200).end("target");
      } else if (path === "/hang") {
        // never answers
      } else if (path === "/big") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        res.on("close", () => (big.closedByClient = true));
        const pump = () => {
          while (big.bytesWritten < 5 * 1024 * 1024) {
            big.bytesWritten += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          // 5 MB written: keep the response open, so only a reader that stops early returns
        };
        pump();
      } else {
        res.writeHead(404).end();
      }
    });
  });
  return { hits, big };
}

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

async function rejection(p: Promise<unknown>): Promise<WebhookDeliveryError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(WebhookDeliveryError);
    return err as WebhookDeliveryError;
  }
  throw new Error("expected the delivery to fail");
}

const allowPrivate = parseAllowList(["127.0.0.0/8"]);
const payload = JSON.stringify({ id: "evt_1", type: "message.delivered" });

describe("webhook delivery over http (pinned address, no second lookup)", () => {
  let server: http.Server;
  let port: number;
  let state: ReturnType<typeof receiver>;
  let lookup: ReturnType<typeof fakeLookup>;

  before(async () => {
    server = http.createServer();
    state = receiver(server);
    port = await listen(server);
  });
  after(() => close(server));
  beforeEach(() => {
    state.hits.splice(0);
    lookup = fakeLookup({ "some-name.test": ["127.0.0.1"], "other.test": ["127.0.0.2"] });
  });

  it("delivers to the checked address with Host some-name.test:<port>, resolving the host exactly once per delivery", async () => {
    const url = `http://some-name.test:${port}/hook`;
    for (let i = 1; i <= 3; i++) {
      const r = await deliverWebhook(url, { allowPrivate, lookup }, {
        headers: { "Content-Type": "application/json", "Svc-Event-Id": `evt_${i}`, Host: "evil.test" },
        body: payload,
      });
      expect(r.status).to.equal(204);
      expect(r.address).to.equal("127.0.0.1");
      expect(r.latencyMs).to.be.a("number").at.least(0);
      expect(lookup.calls, `after delivery ${i}`).to.deep.equal(Array(i).fill("some-name.test"));
    }
    expect(state.hits).to.have.length(3);
    for (const [i, hit] of state.hits.entries()) {
      expect(hit.host, "Host is the URL's, not a caller's override").to.equal(`some-name.test:${port}`);
      expect(hit.path).to.equal("/hook");
      expect(hit.body).to.equal(payload);
      expect(hit.headers["svc-event-id"]).to.equal(`evt_${i + 1}`);
      expect(hit.headers["content-type"]).to.equal("application/json");
      expect(hit.headers["content-length"]).to.equal(String(Buffer.byteLength(payload)));
    }
    // some-name.test exists in no DNS: the request arriving at all shows nothing resolved it again.
  });

  it("returns a 302 as status 302 and does not follow it", async () => {
    const r = await deliverWebhook(`http://some-name.test:${port}/redirect`, { allowPrivate, lookup }, { body: payload });
    expect(r.status).to.equal(302);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(state.hits.filter((h) => h.path === "/target")).to.have.length(0);
    expect(state.hits.filter((h) => h.path === "/redirect")).to.have.length(1);
    expect(lookup.calls).to.have.length(1);
  });

  it("fails with reason timeout within timeoutMs when the receiver never answers", async () => {
    const started = Date.now();
    const err = await rejection(deliverWebhook(`http://some-name.test:${port}/hang`, { allowPrivate, lookup }, { body: payload, timeoutMs: 300 }));
    const elapsed = Date.now() - started;
    expect(err.reason).to.equal("timeout");
    expect(elapsed).to.be.at.least(250).and.below(300 + 700);
    expect(state.hits.filter((h) => h.path === "/hang")).to.have.length(1);
  });

  it("counts a resolver that never answers against the same timeout", async () => {
    const stuck: Lookup = () => new Promise(() => undefined);
    const started = Date.now();
    const err = await rejection(deliverWebhook(`http://some-name.test:${port}/hook`, { allowPrivate, lookup: stuck }, { body: payload, timeoutMs: 300 }));
    expect(err.reason).to.equal("timeout");
    expect(Date.now() - started).to.be.below(1000);
    expect(state.hits).to.have.length(0);
  });

  it("reads a large response body only up to the limit and returns without waiting for the rest", async () => {
    const before = process.memoryUsage().heapUsed;
    const started = Date.now();
    const r = await deliverWebhook(`http://some-name.test:${port}/big`, { allowPrivate, lookup }, { body: payload, timeoutMs: 10_000 });
    expect(r.status).to.equal(200);
    expect(Date.now() - started, "the body never ends: only an early stop returns").to.be.below(2000);
    expect(r.bodyBytes).to.be.at.least(64 * 1024).and.at.most(2 * 64 * 1024);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(state.big.closedByClient, "the client dropped the connection").to.equal(true);
    expect(process.memoryUsage().heapUsed - before).to.be.below(4 * 1024 * 1024);
  });

  it("refuses, without connecting, a host whose address is not allow-listed, and names DNS failures", async () => {
    const narrow = parseAllowList(["127.0.0.1/32"]);
    const blocked = await rejection(deliverWebhook(`http://other.test:${port}/hook`, { allowPrivate: narrow, lookup }, { body: payload }));
    expect(blocked.reason).to.equal("blocked");
    expect(blocked.message).to.include("127.0.0.2").and.include("loopback");
    const https127 = await rejection(deliverWebhook(`https://other.test:${port}/hook`, { allowPrivate: parseAllowList([]), lookup }, { body: payload }));
    expect(https127.reason).to.equal("blocked");
    const dns = await rejection(deliverWebhook(`http://missing.test:${port}/hook`, { allowPrivate, lookup }, { body: payload }));
    expect(dns.reason).to.equal("dns");
    expect(state.hits).to.have.length(0);
  });

  it("reports a refused connection as connection_refused", async () => {
    const closed = http.createServer();
    const closedPort = await listen(closed);
    await close(closed);
    const err = await rejection(deliverWebhook(`http://some-name.test:${closedPort}/hook`, { allowPrivate, lookup }, { body: payload, timeoutMs: 2000 }));
    expect(err.reason).to.equal("connection_refused");
  });

  it("postToCheckedAddress refuses an IP-literal URL that is not the checked address", async () => {
    const err = await rejection(postToCheckedAddress({ url: `http://127.0.0.2:${port}/hook`, address: "127.0.0.1", family: 4, body: payload }));
    expect(err.reason).to.equal("blocked");
    const fam = await rejection(postToCheckedAddress({ url: `http://some-name.test:${port}/hook`, address: "127.0.0.1", family: 6, body: payload }));
    expect(fam.reason).to.equal("blocked");
    expect(state.hits).to.have.length(0);
  });
});

describe("webhook delivery to an IPv6 address", () => {
  it("pins an IPv6 address the same way (::1, allow-listed as ::1/128)", async function () {
    const server = http.createServer();
    const state = receiver(server);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "::1", resolve);
      });
    } catch {
      this.skip(); // no IPv6 loopback on this machine
    }
    try {
      const port = (server.address() as AddressInfo).port;
      const lookup = fakeLookup({ "v6-name.test": ["::1"] });
      const r = await deliverWebhook(`http://v6-name.test:${port}/hook`, { allowPrivate: parseAllowList(["::1/128"]), lookup }, { body: payload });
      expect(r).to.deep.include({ status: 204, address: "::1" });
      expect(state.hits[0]!.host).to.equal(`v6-name.test:${port}`);
      expect(lookup.calls).to.deep.equal(["v6-name.test"]);
      // the IPv4 allow-list does not cover ::1
      const refused = await rejection(deliverWebhook(`http://v6-name.test:${port}/hook`, { allowPrivate, lookup }, { body: payload }));
      expect(refused.reason).to.equal("blocked");
      expect(state.hits).to.have.length(1);
    } finally {
      await close(server);
    }
  });
});

describe("webhook delivery over https (certificate checked against the hostname)", () => {
  let server: https.Server;
  let port: number;
  let state: ReturnType<typeof receiver>;
  const lookup = fakeLookup({ "some-name.test": ["127.0.0.1"], "other-name.test": ["127.0.0.1"] });

  before(async () => {
    server = https.createServer({ key: TLS_KEY, cert: TLS_CERT });
    state = receiver(server);
    port = await listen(server);
  });
  after(() => close(server));
  beforeEach(() => state.hits.splice(0));

  it("connects to the checked address with SNI and Host set to the hostname", async () => {
    const r = await deliverWebhook(`https://some-name.test:${port}/hook`, { allowPrivate, lookup }, { body: payload, ca: TLS_CERT });
    expect(r.status).to.equal(204);
    expect(state.hits).to.have.length(1);
    expect(state.hits[0]!.servername).to.equal("some-name.test");
    expect(state.hits[0]!.host).to.equal(`some-name.test:${port}`);
  });

  it("keeps certificate validation on: an untrusted certificate or another hostname fails with reason tls", async () => {
    const untrusted = await rejection(deliverWebhook(`https://some-name.test:${port}/hook`, { allowPrivate, lookup }, { body: payload }));
    expect(untrusted.reason).to.equal("tls");
    const wrongName = await rejection(deliverWebhook(`https://other-name.test:${port}/hook`, { allowPrivate, lookup }, { body: payload, ca: TLS_CERT }));
    expect(wrongName.reason).to.equal("tls");
    expect(wrongName.message).to.match(/ERR_TLS_CERT_ALTNAME_INVALID|other-name\.test/);
    expect(state.hits).to.have.length(0);
  });
});
