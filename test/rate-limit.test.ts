// The per-key request rate: a token bucket per key and process (server/http/rate-limit.ts),
// 100 requests a second with a burst of 200 by default, lowered with API_RATE_LIMIT_PER_MINUTE.
import { expect } from "chai";
import { loadConfig } from "../server/config.js";
import { TokenBucketLimiter } from "../server/http/rate-limit.js";
import { testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { startChildGateway } from "./support/child-gateway.js";
import { obtainTokens, webUrl } from "./support/oauth.js";

describe("per-key request rate", function () {
  this.timeout(60_000);

  it("defaults to 100 a second with a burst of 200: a 5,000-message burst passes in under a minute", () => {
    const config = loadConfig({ NODE_ENV: "test", DATA_DIR: testEnv().dataDir });
    expect(config.apiRateLimitPerMinute).to.equal(6000);
    expect(config.apiRateLimitBurst).to.equal(200);
    const limiter = new TokenBucketLimiter(config.apiRateLimitPerMinute / 60, config.apiRateLimitBurst);
    const t0 = 1_000_000;
    // All at once: the burst, not one more.
    for (let i = 0; i < 200; i++) expect(limiter.take("k", t0).allowed, `request ${i + 1}`).to.equal(true);
    const refused = limiter.take("k", t0);
    expect(refused).to.include({ allowed: false, limit: 200, remaining: 0, resetSeconds: 1 });
    // Then 100 a second: 5,000 in 48 s at the pace a client that honours Retry-After keeps.
    let passed = 200;
    for (let ms = 10; passed < 5000; ms += 10) if (limiter.take("k", t0 + ms).allowed) passed++;
    const last = limiter.take("k", t0 + 48_000);
    expect(passed).to.equal(5000);
    expect(last.allowed).to.equal(false);
    // Another key has its own bucket.
    expect(limiter.take("other", t0).allowed).to.equal(true);
  });

  it("takes API_RATE_LIMIT_PER_MINUTE and API_RATE_LIMIT_BURST, and counts refills to the millisecond", () => {
    const config = loadConfig({ NODE_ENV: "test", DATA_DIR: testEnv().dataDir, API_RATE_LIMIT_PER_MINUTE: "600" });
    expect(config.apiRateLimitBurst).to.equal(20);
    const limiter = new TokenBucketLimiter(600 / 60, 20);
    for (let i = 0; i < 20; i++) limiter.take("k", 0);
    expect(limiter.take("k", 0).allowed).to.equal(false);
    expect(limiter.take("k", 99).allowed).to.equal(false); // 0.99 of a token
    expect(limiter.take("k", 100).allowed).to.equal(true);
    expect(limiter.take("k", 100).allowed).to.equal(false);
    expect(() => loadConfig({ NODE_ENV: "test", DATA_DIR: testEnv().dataDir, API_RATE_LIMIT_BURST: "0" })).to.throw(/API_RATE_LIMIT_BURST/);
  });

  it("answers 429 past the burst over HTTP with Retry-After and RateLimit headers, and again once a token refilled", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key(["messages:read"]);
    const child = await startChildGateway({ API_RATE_LIMIT_PER_MINUTE: "60", API_RATE_LIMIT_BURST: "5", DISPATCHER: "off" });
    try {
      const whoami = () => fetch(`${child.url}/v1/whoami`, { headers: { authorization: `Bearer ${key}` } });
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 6; i++) {
        last = await whoami();
        statuses.push(last.status);
        if (i === 0) expect(last.headers.get("ratelimit-remaining")).to.equal("4");
      }
      expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429]);
      expect(last!.headers.get("retry-after")).to.equal("1");
      expect(last!.headers.get("ratelimit-limit")).to.equal("5");
      expect(((await last!.json()) as { code: string }).code).to.equal("rate_limited");
      await new Promise((r) => setTimeout(r, 1100));
      expect((await whoami()).status).to.equal(200);
    } finally {
      await child.terminate();
    }
  });

  it("limits an OAuth access token on the tool endpoint like a key, in a bucket of its own", async () => {
    const ws = await newWorkspace();
    const { access } = await obtainTokens(ws.owner.cookie);
    const { key } = await ws.key(["mcp:read"]);
    // The token is bound to the test gateway's tool resource: the child serves the same one.
    // One token every 10 s: four requests at once on a loaded machine may be checked a second apart.
    const child = await startChildGateway({ API_RATE_LIMIT_PER_MINUTE: "6", API_RATE_LIMIT_BURST: "3", DISPATCHER: "off", WEB_URL: webUrl() });
    try {
      const ping = (credential: string) =>
        fetch(`${child.url}/v1/mcp`, {
          method: "POST",
          headers: { authorization: `Bearer ${credential}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
        });
      // All four at once: one after the other, slow answers (a loaded machine) would let the bucket refill.
      const statuses = (await Promise.all([1, 2, 3, 4].map(() => ping(access)))).map((r) => r.status).sort();
      expect(statuses).to.deep.equal([200, 200, 200, 429]);
      // A key of the same member has its own bucket.
      expect((await ping(key)).status).to.equal(200);
    } finally {
      await child.terminate();
    }
  });
});
