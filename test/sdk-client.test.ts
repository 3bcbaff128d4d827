// The SDK client against a scripted fetch: credentials, idempotency keys, what is retried and what
// is not, typed errors and pagination. No server needed.
import { expect } from "chai";
import { backoffMs, DEFAULT_RETRY_POLICY } from "../sdk/src/retry.js";
import {
  autoPaginate,
  createClient,
  expectOk,
  expectStatus,
  isProblem,
  listAllMessages,
  listAllWebhookDeliveries,
  newIdempotencyKey,
  paginate,
  SvcApiError,
  SvcConnectionError,
  type ClientOptions,
} from "../sdk/src/index.js";

type Step = Response | Error | (() => Response);

interface Recorded {
  url: string;
  method: string;
  headers: Headers;
  body: string | undefined;
}

function scripted(...steps: Step[]) {
  const calls: Recorded[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    calls.push({ url: String(input), method: init?.method ?? "GET", headers: new Headers(init?.headers), body: init?.body as string | undefined });
    const step = steps.shift();
    if (step === undefined) throw new Error("unexpected extra request");
    if (step instanceof Error) throw step;
    return typeof step === "function" ? step() : step;
  };
  return { fetch, calls };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  const contentType = status >= 400 ? "application/problem+json" : "application/json";
  return new Response(JSON.stringify(body), { status, headers: { "content-type": contentType, ...headers } });
}

function problem(status: number, code: string, extra: Record<string, unknown> = {}) {
  return { type: `https://docs.example/errors/${code}`, title: code, status, code, request_id: "req_1", ...extra };
}

const whoami = {
  principal: { type: "api_key", id: "key_1", name: "k", prefix: "svc_test_ab", environment: "test" },
  scopes: ["messages:write"],
  workspace: { id: "ws_1", name: "W", plan: "pro" },
};
const message = { id: "msg_1", object: "message", status: "accepted" };
const send = { body: { connection: "support", to: "+15550001111", body: "hi" } };

function client(fetch: typeof globalThis.fetch, options: Partial<ClientOptions> = {}) {
  return createClient({ baseUrl: "http://gateway.test/", apiKey: "svc_test_key", fetch, retryBaseDelayMs: 1, ...options });
}

describe("sdk client", () => {
  it("sends the API key as a bearer token, the cookie as Cookie, and extra headers", async () => {
    const { fetch, calls } = scripted(json(200, whoami));
    const c = client(fetch, { cookie: "svc_session=abc", headers: { "x-trace": "t1" } });
    const res = await c.workspace.whoami();
    expect(res.status).to.equal(200);
    expect(calls[0]!.url).to.equal("http://gateway.test/v1/whoami");
    expect(calls[0]!.headers.get("authorization")).to.equal("Bearer svc_test_key");
    expect(calls[0]!.headers.get("cookie")).to.equal("svc_session=abc");
    expect(calls[0]!.headers.get("x-trace")).to.equal("t1");
    expect(calls[0]!.headers.has("idempotency-key")).to.equal(false);
  });

  it("labels a change made with the cookie as JSON, bodiless ones included (the gateway's cross-site rule); with a key alone, no label", async () => {
    const noContent = () => new Response(null, { status: 204 });
    const { fetch, calls } = scripted(noContent, json(401, problem(401, "unauthorized")), noContent);
    await client(fetch, { apiKey: undefined, cookie: "svc_session=abc" }).auth.logout();
    await client(fetch, { apiKey: undefined, cookie: "svc_session=abc" }).auth.session();
    await client(fetch).auth.logout();
    expect(calls.map((c) => c.headers.get("content-type"))).to.deep.equal(["application/json", null, null]);
  });

  it("gives every send a fresh Idempotency-Key unless the caller set one", async () => {
    const { fetch, calls } = scripted(json(202, message), json(202, message), json(202, message));
    const c = client(fetch);
    await c.messages.send(send);
    await c.messages.send(send);
    await c.messages.send({ ...send, headers: { "idempotency-key": "order-42" } });
    const [first, second, third] = calls.map((call) => call.headers.get("idempotency-key"));
    expect(first).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(second).to.match(/^[0-9a-f-]{36}$/).and.not.equal(first);
    expect(third).to.equal("order-42");
    expect(calls[0]!.method).to.equal("POST");
    expect(JSON.parse(calls[0]!.body!)).to.deep.equal(send.body);
  });

  it("retries a send after 5xx and network errors with the same key", async () => {
    const { fetch, calls } = scripted(json(503, problem(503, "unavailable")), new TypeError("fetch failed"), json(202, message));
    const res = await client(fetch).messages.send(send);
    expect(res.status).to.equal(202);
    expect(calls).to.have.length(3);
    const keys = new Set(calls.map((call) => call.headers.get("idempotency-key")));
    expect(keys.size).to.equal(1);
  });

  it("waits for its own first attempt when a retried send meets idempotency_in_flight", async () => {
    const inFlight = json(409, problem(409, "idempotency_in_flight"), { "retry-after": "0" });
    const { fetch, calls } = scripted(new TypeError("fetch failed"), inFlight, json(202, message, { "idempotent-replayed": "true" }));
    const res = await client(fetch).messages.send(send);
    expect(res.status).to.equal(202);
    expect(calls).to.have.length(3);
  });

  it("returns a first attempt's idempotency_in_flight to the caller", async () => {
    const { fetch, calls } = scripted(json(409, problem(409, "idempotency_in_flight"), { "retry-after": "0" }));
    const res = await client(fetch).messages.send(send);
    expect(res.status).to.equal(409);
    expect(calls).to.have.length(1);
  });

  it("retries GETs on 5xx and network errors, at most maxRetries times", async () => {
    const { fetch, calls } = scripted(new TypeError("fetch failed"), json(502, {}), json(200, whoami));
    expect((await client(fetch).workspace.whoami()).status).to.equal(200);
    expect(calls).to.have.length(3);

    const refused = Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) });
    const failing = scripted(new TypeError("fetch failed"), refused);
    const err = await expectRejection(client(failing.fetch, { maxRetries: 1 }).workspace.whoami());
    expect(err).to.be.instanceOf(SvcConnectionError);
    const e = err as SvcConnectionError;
    expect(e.name).to.equal("SvcConnectionError");
    expect(e.message).to.equal("GET http://gateway.test/v1/whoami: no answer (ECONNREFUSED) after 2 attempts");
    expect([e.method, e.attempts, e.timedOut, e.cause]).to.deep.equal(["GET", 2, false, refused]);
    expect(failing.calls).to.have.length(2);
  });

  it("gives each attempt `timeout` ms, retries a timed-out GET, and raises SvcConnectionError", async () => {
    // A gateway that never answers: the attempt ends only when its signal aborts.
    let attempts = 0;
    const hanging: typeof globalThis.fetch = (_input, init) => {
      attempts++;
      return new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason)));
    };
    const started = Date.now();
    const err = await expectRejection(client(hanging, { timeout: 50, maxRetries: 1 }).workspace.whoami());
    expect(err).to.be.instanceOf(SvcConnectionError);
    expect((err as SvcConnectionError).timedOut).to.equal(true);
    expect((err as SvcConnectionError).message).to.match(/no answer \(timed out\) after 2 attempts$/);
    expect(attempts).to.equal(2);
    expect(Date.now() - started).to.be.at.least(95).and.below(2000);

    // An answer within the timeout is not affected.
    const { fetch } = scripted(json(200, whoami));
    expect((await client(fetch, { timeout: 1 }).workspace.whoami()).status).to.equal(200);
    expect(() => client(fetch, { timeout: 0 })).to.throw(RangeError);
  });

  it("passes the caller's own abort through as it is, without retrying", async () => {
    const controller = new AbortController();
    let attempts = 0;
    const hanging: typeof globalThis.fetch = (_input, init) => {
      attempts++;
      return new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason)));
    };
    const pending = client(hanging).workspace.whoami({ fetchOptions: { signal: controller.signal } });
    setTimeout(() => controller.abort(new Error("caller gave up")), 20);
    const err = await expectRejection(pending);
    expect(err).to.not.be.instanceOf(SvcConnectionError);
    expect((err as Error).message).to.equal("caller gave up");
    expect(attempts).to.equal(1);
  });

  it("never retries 4xx other than 429, or a POST without an idempotency key", async () => {
    const bad = scripted(json(400, problem(400, "validation_failed", { errors: [{ path: "to", message: "required" }] })));
    expect((await client(bad.fetch).messages.send(send)).status).to.equal(400);
    expect(bad.calls).to.have.length(1);

    const post = scripted(json(503, problem(503, "unavailable")));
    try {
      await client(post.fetch).workspace.createApiKey({ body: { name: "k", scopes: ["messages:read"] } });
      expect.fail("resolved");
    } catch {
      // 503 is not declared for the route: ts-rest's UnknownStatusError
    }
    expect(post.calls).to.have.length(1);

    const offline = scripted(new TypeError("fetch failed"));
    const err = await expectRejection(client(offline.fetch).workspace.createApiKey({ body: { name: "k", scopes: ["messages:read"] } }));
    expect((err as SvcConnectionError).attempts).to.equal(1);
    expect(offline.calls).to.have.length(1);
  });

  it("retries 429 after Retry-After up to 10 s, and returns a longer one", async () => {
    const { fetch, calls } = scripted(json(429, problem(429, "rate_limited"), { "retry-after": "0" }), json(200, whoami));
    expect((await client(fetch).workspace.whoami()).status).to.equal(200);
    expect(calls).to.have.length(2);

    const quota = scripted(json(429, problem(429, "quota_exceeded"), { "retry-after": "86400" }));
    const res = await client(quota.fetch).messages.send(send);
    expect(res.status).to.equal(429);
    expect(quota.calls).to.have.length(1);
  });

  it("backs off up to 200 ms, then 400 ms, by default, each jittered down to half", async () => {
    const { fetch, calls } = scripted(json(503, {}), json(503, {}), json(200, whoami));
    const started = Date.now();
    await client(fetch, { retryBaseDelayMs: undefined }).workspace.whoami();
    const elapsed = Date.now() - started;
    expect(calls).to.have.length(3);
    expect(elapsed).to.be.at.least(295).and.below(2000);
  });

  it("jitters each backoff between half and all of its exponential ceiling", () => {
    const policy = DEFAULT_RETRY_POLICY;
    expect([backoffMs(policy, 0, () => 0), backoffMs(policy, 0, () => 0.999999)]).to.deep.equal([100, 200]);
    expect([backoffMs(policy, 2, () => 0), backoffMs(policy, 2, () => 0.5)]).to.deep.equal([400, 600]);
    // With the real random source, delays of one step spread over the range instead of coinciding.
    const delays = Array.from({ length: 200 }, () => backoffMs(policy, 1));
    expect(Math.min(...delays)).to.be.at.least(200);
    expect(Math.max(...delays)).to.be.at.most(400);
    expect(new Set(delays).size).to.be.above(20);
  });

  it("stops waiting between attempts when the caller aborts", async () => {
    const { fetch, calls } = scripted(json(503, {}), json(200, whoami));
    const controller = new AbortController();
    const pending = client(fetch, { retryBaseDelayMs: 5_000 }).workspace.whoami({ fetchOptions: { signal: controller.signal } });
    setTimeout(() => controller.abort(new Error("caller gave up")), 20);
    const err = await expectRejection(pending);
    expect((err as Error).message).to.equal("caller gave up");
    expect(calls).to.have.length(1);
  });

  it("does not retry when maxRetries is 0", async () => {
    const { fetch, calls } = scripted(json(429, problem(429, "rate_limited"), { "retry-after": "0" }));
    expect((await client(fetch, { maxRetries: 0 }).workspace.whoami()).status).to.equal(429);
    expect(calls).to.have.length(1);
  });

  it("expectOk returns the 2xx body and throws SvcApiError built from the problem", async () => {
    const ok = scripted(json(200, whoami));
    const me = await expectOk(client(ok.fetch).workspace.whoami());
    expect(me.workspace.plan).to.equal("pro");

    const body = problem(409, "connection_not_ready", { detail: "connection support is pairing" });
    const failed = scripted(json(409, body, { "x-request-id": "req_1" }));
    try {
      await expectOk(client(failed.fetch).messages.send(send));
      expect.fail("resolved");
    } catch (err) {
      expect(err).to.be.instanceOf(SvcApiError);
      const e = err as SvcApiError;
      expect([e.status, e.code, e.requestId, e.retryAfter]).to.deep.equal([409, "connection_not_ready", "req_1", undefined]);
      expect(e.problem).to.deep.equal(body);
      expect(e.message).to.equal("409 connection_not_ready: connection support is pairing");
    }
  });

  it("expectOk reports an undeclared status and a non-problem body as SvcApiError", async () => {
    const { fetch } = scripted(new Response("<html>bad gateway</html>", { status: 502, headers: { "content-type": "text/html", "x-request-id": "req_9" } }));
    try {
      await expectOk(client(fetch, { maxRetries: 0 }).workspace.whoami());
      expect.fail("resolved");
    } catch (err) {
      expect(err).to.be.instanceOf(SvcApiError);
      const e = err as SvcApiError;
      expect([e.status, e.code, e.requestId, e.problem]).to.deep.equal([502, "http_502", "req_9", undefined]);
    }
  });

  it("expectOk carries Retry-After; expectStatus narrows to the expected statuses", async () => {
    const limited = scripted(json(429, problem(429, "rate_limited"), { "retry-after": "30" }));
    const err = await expectRejection(expectOk(client(limited.fetch).workspace.whoami()));
    expect((err as SvcApiError).retryAfter).to.equal(30);

    const conflict = scripted(json(409, problem(409, "connection_not_ready")));
    const res = await expectStatus(client(conflict.fetch).messages.send(send), 409);
    expect(res.body.code).to.equal("connection_not_ready");
    expect(isProblem(res.body)).to.equal(true);
    expect(isProblem({ status: 409 })).to.equal(false);
  });

  it("answers a 204 with an undefined body", async () => {
    const { fetch } = scripted(new Response(null, { status: 204 }));
    const res = await client(fetch).webhooks.delete({ params: { id: "we_1" } });
    expect(res).to.include({ status: 204, body: undefined });
  });

  it("paginate follows next_cursor until null; listAllMessages passes filters and cursors", async () => {
    const pages: Record<string, { data: number[]; next_cursor: string | null }> = {
      start: { data: [1, 2], next_cursor: "c2" },
      c2: { data: [3], next_cursor: "c3" },
      c3: { data: [], next_cursor: null },
    };
    const seen: (string | undefined)[] = [];
    const items: number[] = [];
    for await (const n of paginate(async (cursor) => (seen.push(cursor), pages[cursor ?? "start"]!))) items.push(n);
    expect(items).to.deep.equal([1, 2, 3]);
    expect(seen).to.deep.equal([undefined, "c2", "c3"]);

    const { fetch, calls } = scripted(json(200, { data: [{ id: "msg_2" }], next_cursor: "abc" }), json(200, { data: [{ id: "msg_1" }], next_cursor: null }));
    const ids: string[] = [];
    for await (const m of listAllMessages(client(fetch), { status: "failed", limit: 50 })) ids.push(m.id);
    expect(ids).to.deep.equal(["msg_2", "msg_1"]);
    expect(new URL(calls[0]!.url).search).to.equal("?status=failed&limit=50");
    expect(new URL(calls[1]!.url).searchParams.get("cursor")).to.equal("abc");
  });

  it("autoPaginate walks any cursor list; listAllWebhookDeliveries keeps the endpoint and filters", async () => {
    const { fetch, calls } = scripted(
      json(200, { data: [{ id: "del_2" }], next_cursor: "n1" }),
      json(200, { data: [{ id: "del_1" }], next_cursor: null }),
      json(200, { data: [{ id: "del_9" }], next_cursor: null }),
    );
    const c = client(fetch);
    const ids: string[] = [];
    for await (const d of autoPaginate(c.webhooks.listDeliveries, { params: { id: "whe_1" }, query: { status: "failed" } })) ids.push(d.id);
    expect(ids).to.deep.equal(["del_2", "del_1"]);
    expect(calls.map((call) => new URL(call.url).pathname + new URL(call.url).search)).to.deep.equal([
      "/v1/webhook-endpoints/whe_1/deliveries?status=failed",
      "/v1/webhook-endpoints/whe_1/deliveries?status=failed&cursor=n1",
    ]);
    for await (const d of listAllWebhookDeliveries(c, "whe_2")) ids.push(d.id);
    expect(ids.at(-1)).to.equal("del_9");
    expect(new URL(calls[2]!.url).pathname).to.equal("/v1/webhook-endpoints/whe_2/deliveries");

    const failing = scripted(json(404, problem(404, "not_found")));
    const err = await expectRejection((async () => {
      for await (const _ of autoPaginate(client(failing.fetch).webhooks.listDeliveries, { params: { id: "whe_x" } })) void _;
    })());
    expect((err as SvcApiError).code).to.equal("not_found");
  });

  it("paginate stops on a cursor that does not advance", async () => {
    const stuck = paginate(async () => ({ data: [1], next_cursor: "same" }));
    const err = await expectRejection((async () => {
      for await (const _ of stuck) void _;
    })());
    expect((err as Error).message).to.match(/did not advance/);
  });
});

async function expectRejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  return expect.fail("resolved");
}

describe("sdk idempotency keys outside a secure context", () => {
  it("makes a version-4 UUID from getRandomValues where randomUUID is missing (a page over plain http)", () => {
    const crypto = globalThis.crypto as { randomUUID?: unknown };
    Object.defineProperty(crypto, "randomUUID", { value: undefined, configurable: true });
    try {
      const keys = new Set(Array.from({ length: 100 }, () => newIdempotencyKey()));
      expect(keys.size).to.equal(100);
      for (const k of keys) expect(k).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    } finally {
      delete (crypto as { randomUUID?: unknown }).randomUUID;
    }
    expect(typeof globalThis.crypto.randomUUID).to.equal("function");
  });
});
