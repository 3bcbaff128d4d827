import { expect } from "chai";
import { Writable } from "node:stream";
import { loadConfig, ConfigError } from "../server/config.js";
import { createLogger } from "../server/logger.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";
import { CHILD_READY_MS, startChildGateway } from "./support/child-gateway.js";
import { waitFor } from "./support/wait.js";

describe("operational endpoints", () => {
  it("answers /healthz without touching dependencies and /readyz when the database and job runner are up", async () => {
    const health = await http("GET", "/healthz");
    expect(health.status).to.equal(200);
    const ready = await http("GET", "/readyz");
    expect(ready.status).to.equal(200);
    expect(ready.json).to.deep.equal({ status: "ready" });
  });

  it("serves /metrics only with the token, and no label names a workspace, connection, number or session", async () => {
    const ws = await newWorkspace();
    await ws.owner.client.workspace.get();
    expect((await http("GET", "/metrics")).status).to.equal(401);
    expect((await http("GET", "/metrics", { headers: { authorization: "Bearer wrong-token-wrong-token" } })).status).to.equal(401);
    const res = await http("GET", "/metrics", { headers: { authorization: "Bearer test-metrics-token-0123456789" } });
    expect(res.status).to.equal(200);
    expect(res.text).to.include("svc_http_requests_total").and.include('route="/v1/workspace"');
    expect(res.text).to.not.include(ws.id).and.not.include(ws.owner.email).and.not.include("svc_session");
    const labelNames = new Set([...res.text.matchAll(/[{,]([a-z_]+)="/g)].map((m) => m[1]));
    for (const forbidden of ["workspace", "workspace_id", "connection", "phone", "number", "session"]) expect(labelNames).to.not.include(forbidden);
  });

  it("answers `curl /` with the API's 404, and a browser asking for HTML with the dashboard", async () => {
    // curl sends Accept: */*: the root is not an API resource (README, "The dashboard").
    const curl = await http("GET", "/", { headers: { accept: "*/*" } });
    expect(curl.status).to.equal(404);
    expect(curl.headers.get("content-type")).to.match(/^application\/problem\+json/);
    expect(curl.json.code).to.equal("not_found");
    const browser = await http("GET", "/", { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
    expect(browser.status).to.equal(200);
    expect(browser.headers.get("content-type")).to.match(/^text\/html/);
  });

  it("publishes the RFC 9727 API catalog pointing at the OpenAPI document", async () => {
    const res = await http("GET", "/.well-known/api-catalog");
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.match(/^application\/linkset\+json/);
    const anchor = (res.json.linkset as { "service-desc": { href: string }[] }[])[0]!;
    expect(anchor["service-desc"][0]!.href).to.equal(`${testEnv().gateway.ctx.config.baseUrl}/v1/openapi.json`);
    const head = await fetch(`${testEnv().baseUrl}/.well-known/api-catalog`, { method: "HEAD" });
    expect(head.headers.get("link")).to.match(/rel="api-catalog"/);
  });

  it("answers every error as problem+json with a stable code and the request id of X-Request-Id", async () => {
    const unknown = await http("GET", "/v1/nothing-here");
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get("content-type")).to.match(/^application\/problem\+json/);
    expect(unknown.json).to.include({ code: "not_found", status: 404 });
    expect(unknown.json.request_id).to.equal(unknown.headers.get("x-request-id"));

    const malformed = await http("POST", "/v1/auth/request-code", { raw: "{not json" });
    expect(malformed.status).to.equal(400);
    expect(malformed.json.code).to.equal("validation_failed");

    const tooLarge = await http("POST", "/v1/auth/request-code", { raw: JSON.stringify({ email: "a@b.c", pad: "x".repeat(1024 * 1024) }) });
    expect(tooLarge.status).to.equal(413);
    expect(tooLarge.json.code).to.equal("payload_too_large");

    const traced = await http("GET", "/v1/nothing", { headers: { "x-request-id": "trace-abc-12345" } });
    expect(traced.headers.get("x-request-id")).to.equal("trace-abc-12345");
    expect(traced.json.request_id).to.equal("trace-abc-12345");
  });

  // Every specified operation is built now: no 501 is
  // left to check; the caller is still checked first on what was the last one.
  it("checks the caller before answering, on the operation that answered 501 last", async () => {
    const ws = await newWorkspace();
    const { key } = await ws.key(["ai:read"]);
    const auth = { authorization: `Bearer ${key}` };
    expect((await http("GET", "/v1/ai/runs")).status).to.equal(401);
    const wrongScope = await ws.key(["ai:write"]);
    expect((await http("GET", "/v1/ai/runs", { headers: { authorization: `Bearer ${wrongScope.key}` } })).status).to.equal(403);
    const valid = await http("GET", "/v1/ai/runs", { headers: auth });
    expect(valid.status).to.equal(200);
    expect(valid.json).to.deep.equal({ data: [], next_cursor: null });
  });
});

/** A logger at `info` whose lines are kept in `lines`. */
function capturedLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { lines, log: createLogger("info", sink) };
}

describe("readiness while the engines open", function () {
  this.timeout(CHILD_READY_MS + 60_000);

  it("answers /readyz 503 naming engines (opening) until the engines are open and the loops run, then 200", async () => {
    // The Baileys engine fetches the network's client version as it opens: a slow answer keeps it opening.
    const child = await startChildGateway({ STAND_IN_VERSION_DELAY_MS: "5000" }, { ready: false });
    try {
      const probe = () =>
        fetch(`${child.url}/readyz`).then(
          async (r) => ({ status: r.status, body: (await r.json()) as { status?: string; unavailable?: string[] } }),
          () => null,
        );
      const opening = await waitFor(probe, (r) => r !== null && r.body.unavailable?.includes("engines (opening)") === true, CHILD_READY_MS);
      expect(opening!.status).to.equal(503);
      expect(opening!.body.unavailable).to.deep.equal(["engines (opening)"]);
      // The port answers the API meanwhile (the engines report through it while they open).
      expect((await fetch(`${child.url}/healthz`)).status).to.equal(200);
      const ready = await waitFor(probe, (r) => r?.status === 200, 30_000);
      expect(ready!.body.status).to.equal("ready");
      expect(child.output()).to.include("baileys client version fetched");
    } finally {
      await child.terminate();
    }
  });
});

describe("configuration and logs", () => {
  it("refuses to start in production without DATABASE_URL, SECRET_KEY and BASE_URL", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).to.throw(ConfigError, /DATABASE_URL, SECRET_KEY, BASE_URL/);
    const key = Buffer.alloc(32, 7).toString("base64");
    const config = loadConfig({ NODE_ENV: "production", DATABASE_URL: "postgres://x/y", SECRET_KEY: key, BASE_URL: "https://api.example.com/", SMTP_URL: "smtp://mail.example.com" });
    expect(config.baseUrl).to.equal("https://api.example.com");
    expect(config.sandboxEnabled).to.equal(false);
    expect(() => loadConfig({ SECRET_KEY: Buffer.alloc(31).toString("base64"), DATA_DIR: testEnv().dataDir })).to.throw(ConfigError, /32 random bytes/);
    expect(() => loadConfig({ PORT: "70000", DATA_DIR: testEnv().dataDir })).to.throw(ConfigError, /PORT/);
  });

  it("takes AI_DEBOUNCE_MS from 100 to 3000 ms, 3000 unset", () => {
    const dir = { DATA_DIR: testEnv().dataDir };
    expect(loadConfig(dir).ai.debounceMs).to.equal(3_000);
    expect(loadConfig({ ...dir, AI_DEBOUNCE_MS: "100" }).ai.debounceMs).to.equal(100);
    expect(loadConfig({ ...dir, AI_DEBOUNCE_MS: "3000" }).ai.debounceMs).to.equal(3_000);
    expect(() => loadConfig({ ...dir, AI_DEBOUNCE_MS: "99" })).to.throw(ConfigError, /AI_DEBOUNCE_MS/);
    expect(() => loadConfig({ ...dir, AI_DEBOUNCE_MS: "3001" })).to.throw(ConfigError, /AI_DEBOUNCE_MS/);
  });

  it("takes AI_VENDOR_TIMEOUT_S from 1 to 150 s, 30 unset", () => {
    const dir = { DATA_DIR: testEnv().dataDir };
    expect(loadConfig(dir).ai.vendorTimeoutMs).to.equal(30_000);
    expect(loadConfig({ ...dir, AI_VENDOR_TIMEOUT_S: "1" }).ai.vendorTimeoutMs).to.equal(1_000);
    expect(loadConfig({ ...dir, AI_VENDOR_TIMEOUT_S: "150" }).ai.vendorTimeoutMs).to.equal(150_000);
    for (const bad of ["0", "151", "2.5"]) expect(() => loadConfig({ ...dir, AI_VENDOR_TIMEOUT_S: bad })).to.throw(ConfigError, /AI_VENDOR_TIMEOUT_S/);
  });

  it("redacts credentials from structured logs", () => {
    const { lines, log } = capturedLogger();
    log.info({ req: { headers: { authorization: "Bearer svc_live_secret", cookie: "svc_session=abc" } }, body: { api_key: "sk-secret", code: "123456" } }, "x");
    expect(lines.join("")).to.not.include("svc_live_secret").and.not.include("svc_session=abc").and.not.include("sk-secret").and.not.include("123456");
    expect(lines.join("")).to.include("[redacted]");
  });

  it("keeps an error's code (a system or SQLSTATE code, never a credential) as error_code", () => {
    const { lines, log } = capturedLogger();
    log.warn({ err: Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }) }, "database went away");
    const line = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(line.err).to.include({ error_code: "57P01", message: "terminating connection due to administrator command" });
    expect(line.err).to.not.have.property("code");
  });
});
