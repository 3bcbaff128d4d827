// Hostile input at the HTTP edge (server/http/json-body.ts, server/http/input-check.ts): every
// refusal is a problem+json 4xx naming what was wrong, nothing is stored, nothing is altered.
import { request } from "node:http";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import express from "express";
import { contract, ISSUABLE_SCOPES, routesOf, type RouteMetadata } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { errorMiddleware } from "../server/http/errors.js";
import { MAX_BODY_BYTES, MAX_JSON_DEPTH } from "../server/http/json-body.js";
import { testEnv } from "./setup.js";
import { fromDashboard, http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";

const db = () => testEnv().gateway.ctx.db;

async function connected(ws: TestWorkspace) {
  const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write", "schedules:write", "webhooks:write"]);
  const slug = `bi-${randomBytes(3).toString("hex")}`;
  await pairConnection(key.client, slug, uniquePhone());
  return { slug, auth: { authorization: `Bearer ${key.key}` } };
}

/** A raw request, so that headers and bytes go on the wire exactly as given. */
function raw(
  path: string,
  init: { headers: Record<string, string | string[]>; body?: Buffer; writeBody?: boolean },
): Promise<{ status: number; type: string; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${testEnv().baseUrl}${path}`, { method: "POST", headers: init.headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, type: String(res.headers["content-type"]), json: JSON.parse(text) as Record<string, unknown> }));
    });
    // Writing after the server answered and closed may fail; the answer is what is tested.
    req.on("error", reject);
    if (init.writeBody === false) req.flushHeaders();
    else req.end(init.body);
  });
}

function nested(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe("bad input at the HTTP edge", () => {
  it("answers 413 problem+json on Content-Length over 1 MiB before reading the body; exactly 1 MiB is read", async () => {
    const over = await raw("/v1/auth/request-code", {
      headers: { "content-type": "application/json", "content-length": String(MAX_BODY_BYTES + 1) },
      writeBody: false, // not one byte sent: the answer cannot have waited for the body
    });
    expect(over.status).to.equal(413);
    expect(over.type).to.match(/^application\/problem\+json/);
    expect(over.json.code).to.equal("payload_too_large");

    const prefix = '{"email":"a@b.example","pad":"';
    const exact = Buffer.from(prefix + "x".repeat(MAX_BODY_BYTES - prefix.length - 2) + '"}');
    expect(exact.length).to.equal(MAX_BODY_BYTES);
    const atLimit = await raw("/v1/auth/request-code", { headers: { "content-type": "application/json", "content-length": String(exact.length) }, body: exact });
    expect(atLimit.status).to.equal(400); // read and validated: `pad` is not a field
    expect(JSON.stringify(atLimit.json.errors)).to.match(/pad/);

    // Without a Content-Length (chunked), the limit holds while reading.
    const chunked = await raw("/v1/auth/request-code", {
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
      body: Buffer.concat([exact, Buffer.from(" ")]),
    });
    expect(chunked.status).to.equal(413);
    expect(chunked.json.code).to.equal("payload_too_large");
  });

  it("accepts JSON nested 64 deep and refuses 65 or 5,000 levels with 400, on authenticated and open routes", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const send = (metadata: unknown) =>
      http("POST", "/v1/messages/text", { body: { connection: c.slug, to: uniquePhone(), body: "deep", metadata }, headers: c.auth });
    // The body object is level 1, metadata level 2, and so on.
    const deepest = await send(nested(MAX_JSON_DEPTH - 1));
    expect(deepest.status, deepest.text).to.equal(202);
    const tooDeep = await send(nested(MAX_JSON_DEPTH));
    expect(tooDeep.status).to.equal(400);
    expect(tooDeep.json.code).to.equal("validation_failed");
    expect((tooDeep.json.errors as { message: string }[])[0]!.message).to.match(/deeper than 64/);

    const hostile = "[".repeat(5000) + "]".repeat(5000);
    for (const path of ["/v1/auth/request-code", "/v1/messages/text"]) {
      const res = await http("POST", path, { raw: hostile, headers: c.auth });
      expect(res.status, path).to.equal(400);
      expect(res.json.code).to.equal("validation_failed");
    }
  });

  it("refuses duplicate keys with 400 naming the key, wherever they are and however they are spelled", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const cases: [string, string][] = [
      [`{"connection":"nope","to":"${uniquePhone()}","body":"x","connection":"${c.slug}"}`, "body.connection"],
      [`{"connection":"${c.slug}","to":"${uniquePhone()}","body":"x","metadata":{"k":1,"k":2}}`, "body.metadata.k"],
      [`{"connection":"${c.slug}","to":"${uniquePhone()}","body":"x","metadata":{"k":1,"\\u006b":2}}`, "body.metadata.k"],
    ];
    for (const [body, path] of cases) {
      const res = await http("POST", "/v1/messages/text", { raw: body, headers: c.auth });
      expect(res.status, body).to.equal(400);
      expect(res.json.errors).to.deep.equal([{ path, message: "is given twice in one object (duplicate key)" }]);
    }
    // The same key in two different objects is no duplicate.
    const fine = await http("POST", "/v1/messages/text", {
      raw: `{"connection":"${c.slug}","to":"${uniquePhone()}","body":"x","metadata":{"k":{"k":1}},"context":{"k":2}}`,
      headers: c.auth,
    });
    expect(fine.status, fine.text).to.equal(202);
    expect(await db().query(`SELECT 1 FROM messages WHERE workspace_id = $1`, [ws.id])).to.have.length(1);
  });

  it("refuses a lone UTF-16 surrogate with 400 naming the field everywhere, and keeps a proper pair as sent", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const lone = "x\ud800y";
    const cases: [string, Record<string, unknown>, string][] = [
      ["/v1/messages/text", { connection: c.slug, to: uniquePhone(), body: lone }, "body.body"],
      ["/v1/messages/text", { connection: c.slug, to: `+1555${lone}`, body: "b" }, "body.to"],
      ["/v1/messages/text", { connection: c.slug, to: uniquePhone(), body: "b", context: { ["k\udc00"]: 1 } }, "body.context.k\\udc00"],
      ["/v1/connections", { slug: `s-${randomBytes(3).toString("hex")}`, name: lone }, "body.name"],
      ["/v1/schedules", { name: lone, timezone: "UTC", recurrence: { every: "day" }, message: { body: "b" } }, "body.name"],
      ["/v1/schedules", { name: "n", timezone: "UTC", recurrence: { every: "day" }, message: { connection: c.slug, body: lone } }, "body.message.body"],
      ["/v1/webhook-endpoints", { url: "https://example.com/hook", description: lone, events: ["message.received"] }, "body.description"],
    ];
    for (const [path, body, field] of cases) {
      const res = await http("POST", path, { body, headers: c.auth });
      expect(res.status, `${path} ${field}`).to.equal(400);
      expect((res.json.errors as { path: string; message: string }[])[0]).to.deep.equal({
        path: field,
        message: `${field.includes("\\u") ? "names " : ""}must not contain a lone UTF-16 surrogate (U+D800 to U+DFFF without its pair)`,
      });
    }
    expect(await db().query(`SELECT 1 FROM messages WHERE workspace_id = $1`, [ws.id])).to.have.length(0);
    const paired = await http("POST", "/v1/connections", { body: { slug: `p-${randomBytes(3).toString("hex")}`, name: "x\ud83d\ude00y" }, headers: c.auth });
    expect(paired.status).to.equal(201);
    expect(paired.json.name).to.equal("x\ud83d\ude00y");
  });

  it("refuses bytes that are not UTF-8 rather than storing U+FFFD", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const body = Buffer.concat([Buffer.from(`{"connection":"${c.slug}","to":"${uniquePhone()}","body":"x`), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('y"}')]);
    const res = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth }, body });
    expect(res.status).to.equal(400);
    expect(res.json.errors).to.deep.equal([{ path: "body", message: "is not valid UTF-8" }]);
  });

  it("refuses a __proto__ key in metadata or context instead of dropping it", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    for (const field of ["metadata", "context"]) {
      const res = await http("POST", "/v1/messages/text", {
        raw: `{"connection":"${c.slug}","to":"${uniquePhone()}","body":"x","${field}":{"__proto__":{"a":1},"b":2}}`,
        headers: c.auth,
      });
      expect(res.status, field).to.equal(400);
      expect(res.json.errors).to.deep.equal([{ path: `body.${field}.__proto__`, message: "__proto__ is not accepted as a name" }]);
    }
    expect(await db().query(`SELECT 1 FROM messages WHERE workspace_id = $1`, [ws.id])).to.have.length(0);
  });

  it("refuses two Idempotency-Key headers instead of joining them into one key", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const body = Buffer.from(JSON.stringify({ connection: c.slug, to: uniquePhone(), body: "twice" }));
    const res = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth, "idempotency-key": ["one", "two"] }, body });
    expect(res.status).to.equal(400);
    expect(res.json.errors).to.deep.equal([{ path: "headers.idempotency-key", message: "must be given once" }]);
    const once = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth, "idempotency-key": "one" }, body });
    expect(once.status).to.equal(202);
  });

  it("refuses two Authorization or two Content-Type headers with 400, as it does two Idempotency-Keys, and stores nothing", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const other = await ws.key(["messages:write"]);
    const body = Buffer.from(JSON.stringify({ connection: c.slug, to: uniquePhone(), body: "two headers" }));
    const twoKeys = await raw("/v1/messages/text", { headers: { "content-type": "application/json", authorization: [c.auth.authorization, `Bearer ${other.key}`] }, body });
    expect(twoKeys.status).to.equal(400);
    expect(twoKeys.json.errors).to.deep.equal([{ path: "headers.authorization", message: "must be given once" }]);
    const twoTypes = await raw("/v1/messages/text", { headers: { "content-type": ["application/json", "text/plain"], ...c.auth }, body });
    expect(twoTypes.status).to.equal(400);
    expect(twoTypes.json.errors).to.deep.equal([{ path: "headers.content-type", message: "must be given once" }]);
    // Refused before anything reads them: on a public route too, and whatever the credential.
    const token = await raw("/v1/oauth/token", { headers: { "content-type": ["application/x-www-form-urlencoded", "application/json"] }, body: Buffer.from("grant_type=refresh_token") });
    expect(token.status).to.equal(400);
    expect(token.type).to.contain("application/problem+json");
    const unknownKey = await raw("/v1/messages/text", { headers: { "content-type": "application/json", authorization: ["Bearer nothing", "Bearer none"] }, body });
    expect(unknownKey.status).to.equal(400);
    expect(await db().query(`SELECT 1 FROM messages WHERE workspace_id = $1`, [ws.id])).to.have.length(0);
    const once = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth }, body });
    expect(once.status).to.equal(202);
  });

  it("answers a NUL in the provider-callback path 404, like any unknown token", async () => {
    const ws = await newWorkspace();
    const key = await ws.key(["connections:write"]);
    const created = await expectOk(key.client.connections.create({ body: { slug: `nul-${randomBytes(3).toString("hex")}` } }));
    const token = created.callback_token!;
    for (const path of [`/v1/provider/sandbox/${token}%00`, `/v1/provider/sand%00box/${token}`, "/v1/provider/sandbox/%00"]) {
      const res = await http("POST", path, { body: { type: "connection.state", event_id: "e", state: "connected", timestamp: new Date().toISOString() } });
      expect(res.status, path).to.equal(404);
      expect(res.json.detail, path).to.equal("No such callback (unknown provider or token).");
    }
  });

  it("answers a NUL in any path parameter of any route with a 4xx, whichever credential the route takes", async () => {
    const ws = await newWorkspace("enterprise");
    const { key } = await ws.key([...ISSUABLE_SCOPES]);
    for (const { name, route } of routesOf(contract)) {
      if (!route.path.includes(":")) continue;
      const auth = (route.metadata as RouteMetadata).security.auth;
      const credential = auth === "session" ? fromDashboard(ws.owner.cookie) : auth === "none" ? {} : { authorization: `Bearer ${key}` };
      const path = route.path.replace(/:\w+/g, "a%00b");
      const res = await http(route.method, path, { headers: { ...credential, "content-type": "application/json" }, ...(route.method === "GET" ? {} : { raw: "{}" }) });
      expect(res.status, `${name} ${res.text}`).to.be.within(400, 499);
      expect(res.headers.get("content-type"), name).to.contain("application/problem+json");
    }
  });

  it("refuses a NUL in the sandbox control API's bodies with 400 naming the field, as on the API's routes", async () => {
    const res = await http("POST", "/sandbox/v1/numbers", { body: { phone: "+15550001111\u0000" } });
    expect(res.status, res.text).to.equal(400);
    expect(res.json.errors).to.deep.equal([{ path: "body.phone", message: "must not contain the NUL character (U+0000)" }]);
  });

  it("answers 400 when input the edge did not check reaches PostgreSQL as text it cannot hold", async () => {
    // The last line of defence behind the checks above: a real refusal of the database, through
    // the gateway's error middleware, on an app of its own.
    const app = express();
    app.get("/probe", (req, res, next) => {
      db().query(`SELECT $1::text AS t`, [String(req.query.v)]).then((r) => res.json(r), next);
    });
    app.use(errorMiddleware);
    const server = app.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/probe?v=a%00b`);
      expect(res.status).to.equal(400);
      expect(((await res.json()) as { code: string }).code).to.equal("validation_failed");
    } finally {
      server.close();
    }
  });

  it("labels every answer X-Content-Type-Options: nosniff, API and dashboard alike", async () => {
    const ws = await newWorkspace();
    for (const [path, headers] of [
      ["/v1/auth/session", { cookie: ws.owner.cookie }],
      ["/v1/whoami", {}],
      ["/v1/no-such-route", {}],
      ["/v1/openapi.json", {}],
      ["/healthz", {}],
      ["/", { accept: "text/html" }],
    ] as const) {
      const res = await fetch(testEnv().baseUrl + path, { headers });
      await res.body?.cancel();
      expect(res.headers.get("x-content-type-options"), path).to.equal("nosniff");
    }
  });

  it("refuses an unknown query parameter with 400 naming it on every route, with or without a query schema", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    for (const [path, name] of [
      ["/v1/connections?limit=10", "limit"],
      ["/v1/whoami?foo=1", "foo"],
      [`/v1/connections/${c.slug}?expand=all`, "expand"],
      ["/v1/openapi.json?x=1", "x"],
    ] as const) {
      const res = await http("GET", path, { headers: c.auth });
      expect(res.status, path).to.equal(400);
      expect(JSON.stringify(res.json.errors), path).to.contain(`query.${name}`);
    }
    const strict = await http("GET", "/v1/messages?foo=1", { headers: c.auth });
    expect(strict.status).to.equal(400);
    expect(strict.json.detail).to.match(/foo/);
    expect((await http("GET", "/v1/connections", { headers: c.auth })).status).to.equal(200);
    expect((await http("GET", "/v1/whoami", { headers: c.auth })).status).to.equal(200);
  });
  describe("validation details name the rule", () => {
    let c: Awaited<ReturnType<typeof connected>>;
    before(async () => {
      c = await connected(await newWorkspace());
    });
    const errorsOf = (res: { json: Record<string, unknown> }) => res.json.errors as { path: string; message: string }[];

    it("a connection slug: the characters, the length and the hyphens", async () => {
      const rule = "must be 3-40 lowercase letters, digits and hyphens, not starting or ending with a hyphen";
      for (const slug of ["-bad", "bad-", "Bad", "ab", "a".repeat(41), "a_b", 42]) {
        const res = await http("POST", "/v1/connections", { body: { slug }, headers: c.auth });
        expect(res.status, String(slug)).to.equal(400);
        expect(errorsOf(res), String(slug)).to.deep.equal([{ path: "body.slug", message: rule }]);
      }
      for (const slug of ["a-c", `b${"0".repeat(38)}b`]) {
        const res = await http("POST", "/v1/connections", { body: { slug }, headers: c.auth });
        expect(res.status, slug).to.equal(201);
      }
    });

    it("a recipient that is neither a string nor {phone}/{group}", async () => {
      for (const to of [15550002222, null, ["+15550002222"], true]) {
        const res = await http("POST", "/v1/messages/text", { body: { connection: c.slug, to, body: "x" }, headers: c.auth });
        expect(res.status, JSON.stringify(to)).to.equal(400);
        expect(errorsOf(res), JSON.stringify(to)).to.deep.equal([
          { path: "body.to", message: "must be a phone number (a string of 5-40 characters), or an object {phone} or {group}" },
        ]);
      }
      // A near miss keeps the precise message of the option it nearly matched.
      const short = await http("POST", "/v1/messages/text", { body: { connection: c.slug, to: "1234", body: "x" }, headers: c.auth });
      expect(errorsOf(short)[0]!.path).to.equal("body.to");
      expect(errorsOf(short)[0]!.message).to.match(/at least 5/);
    });

    it("an integer query parameter: not a number, out of range, a fraction or given twice", async () => {
      for (const [path, name, rule] of [
        ["/v1/messages?limit=abc", "limit", "must be an integer from 1 to 100"],
        ["/v1/messages?limit=0", "limit", "must be an integer from 1 to 100"],
        ["/v1/messages?limit=101", "limit", "must be an integer from 1 to 100"],
        ["/v1/messages?limit=2.5", "limit", "must be an integer from 1 to 100"],
        ["/v1/messages?limit=", "limit", "must be an integer from 1 to 100"],
        ["/v1/messages/export?days=abc", "days", "must be an integer from 1 to 365"],
        ["/v1/messages?limit=1&limit=2", "limit", "must be given once"],
        ["/v1/messages?status=sent&status=read", "status", "must be given once"],
      ] as const) {
        const res = await http("GET", path, { headers: c.auth });
        expect(res.status, path).to.equal(400);
        expect(errorsOf(res), path).to.deep.equal([{ path: `query.${name}`, message: rule }]);
      }
      for (const path of ["/v1/messages?limit=1", "/v1/messages?limit=100"]) expect((await http("GET", path, { headers: c.auth })).status, path).to.equal(200);
    });

    it("an Idempotency-Key that is not 1-255 printable ASCII characters", async () => {
      const rule = "must be 1-255 printable ASCII characters (U+0020 to U+007E)";
      const body = () => Buffer.from(JSON.stringify({ connection: c.slug, to: uniquePhone(), body: "key" }));
      for (const key of ["clé-1", "k".repeat(256), "tab\there"]) {
        const res = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth, "idempotency-key": key }, body: body() });
        expect(res.status, key).to.equal(400);
        expect(res.json.errors, key).to.deep.equal([{ path: "headers.idempotency-key", message: rule }]);
      }
      for (const key of ["k".repeat(255), "~ !"]) {
        const res = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth, "idempotency-key": key }, body: body() });
        expect(res.status, key).to.equal(202);
      }
    });

    it("a schedule's day_of_month names 1-31 and -1", async () => {
      const rule = "must be an integer from 1 to 31, or -1 for the last day of the month";
      const create = (day_of_month: unknown) =>
        http("POST", "/v1/schedules", {
          body: {
            name: "monthly",
            timezone: "UTC",
            recurrence: { type: "monthly", hour: 9, minute: 0, day_of_month },
            message: { connection: c.slug, to: uniquePhone(), body: "x" },
          },
          headers: c.auth,
        });
      for (const day of [-2, 0, 32, 1.5, "1", null]) {
        const res = await create(day);
        expect(res.status, String(day)).to.equal(400);
        expect(errorsOf(res), String(day)).to.deep.equal([{ path: "body.recurrence.day_of_month", message: rule }]);
      }
      for (const day of [-1, 1, 31]) expect((await create(day)).status, String(day)).to.equal(201);
    });
  });

  it("tells a JSON scalar body (null, a number, a string) from malformed JSON: it must be an object", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    for (const text of ["null", "42", '"text"', "true"]) {
      const res = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth }, body: Buffer.from(text) });
      expect(res.status, text).to.equal(400);
      expect(res.type).to.match(/^application\/problem\+json/);
      expect(res.json.detail, text).to.equal("The request body must be a JSON object.");
    }
    const malformed = await raw("/v1/messages/text", { headers: { "content-type": "application/json", ...c.auth }, body: Buffer.from("nul") });
    expect(malformed.json.detail).to.equal("The request body is not valid JSON.");
  });

  it("answers a known path asked with a method it does not take with 405 and Allow; an unknown path stays 404", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const policy = await http("PATCH", `/v1/ai/policies/${c.slug}`, { headers: c.auth, body: {} });
    expect(policy.status).to.equal(405);
    expect(policy.headers.get("allow")).to.equal("GET, HEAD, PUT");
    expect(policy.json).to.include({ code: "method_not_allowed", detail: "PATCH is not allowed on this path; it takes GET, HEAD, PUT." });
    // A path two routes share by pattern (export and one message) offers what both take.
    expect((await http("DELETE", "/v1/messages/export", { headers: c.auth })).headers.get("allow")).to.equal("GET, HEAD");
    expect((await http("PUT", "/v1/events/stream", { headers: c.auth })).headers.get("allow")).to.equal("GET, HEAD");
    const unknown = await http("PATCH", "/v1/no-such-thing", { headers: c.auth });
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get("allow")).to.equal(null);
  });

  it("names the Content-Type when a body is not sent as JSON (a form, plain text, none), and writes nothing", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    const json = JSON.stringify({ connection: c.slug, to: "+15550002222", body: "hello" });
    const cases: [string | undefined, string][] = [
      ["application/x-www-form-urlencoded", `"application/x-www-form-urlencoded"`],
      ["text/plain", `"text/plain"`],
      [undefined, "missing"],
    ];
    for (const [type, named] of cases) {
      const res = await raw("/v1/messages/text", { headers: { ...(type ? { "content-type": type } : {}), ...c.auth }, body: Buffer.from(type?.startsWith("application/x-www") ? "a=b" : json) });
      expect(res.status, type).to.equal(400);
      expect(res.json.errors, type).to.deep.equal([{ path: "body", message: `must be JSON sent with Content-Type: application/json (this request's Content-Type is ${named})` }]);
    }
    expect((await http("GET", "/v1/messages", { headers: c.auth })).json.data).to.deep.equal([]);
    // The token endpoint takes its form as before: a bad grant is the OAuth error, not this one.
    const token = await raw("/v1/oauth/token", { headers: { "content-type": "application/x-www-form-urlencoded" }, body: Buffer.from("grant_type=nothing") });
    expect(token.status).to.equal(400);
    expect(token.json.errors).to.equal(undefined);
  });

  it("answers a path whose percent-escapes do not decode with 400 saying so, not blaming the body", async () => {
    const ws = await newWorkspace();
    const c = await connected(ws);
    for (const path of [`/v1/connections/${c.slug}/qr/%FF`, "/v1/ai/policies/%ZZ"]) {
      const res = await http("GET", path, { headers: c.auth });
      expect(res.status, path).to.equal(400);
      expect(res.json.code).to.equal("validation_failed");
      expect(res.json.detail).to.equal("The request path could not be decoded (a malformed percent-escape).");
    }
  });
});
