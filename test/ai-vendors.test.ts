// The vendor clients (server/ai/vendor.ts) through the real SDKs (`openai`, `@anthropic-ai/sdk`)
// against loopback servers that speak each wire format (test/support/vendors.ts), over real HTTP:
// the exact body the vendor receives, usage and text, the SDKs' retries and timeout, the error
// codes, the API key's header, and the outbound address policy in front of every connection.
// Independent of the test gateway.
import { expect } from "chai";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { callVendor, MAX_VENDOR_RESPONSE_BYTES, vendorRequestBody, VendorError, type VendorRequest } from "../server/ai/vendor.js";
import { createLogger } from "../server/logger.js";
import { EMPTY_ALLOW_LIST, parseAllowList } from "../server/outbound/address-policy.js";
import { fakeLookup } from "./support/lookup.js";
import { DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_VENDOR_TEXT, startVendorOne, startVendorTwo, type VendorServer } from "./support/vendors.js";

const LOOPBACK = parseAllowList(["127.0.0.0/8"]);
const API_KEY = "sk-test-Zq8vN3xYz";
/** A vendor asking for the next attempt at once, so the retry cases do not wait the SDK's backoff. */
const RETRY_NOW = { "retry-after-ms": "1" };

async function failure(p: Promise<unknown>): Promise<VendorError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(VendorError);
    return err as VendorError;
  }
  throw new Error("expected the call to fail");
}

/** What a log line or an error body could show of the error: message, stack, JSON, and a pino line through our logger. */
function shownOf(err: VendorError): string[] {
  const lines: string[] = [];
  const log = createLogger("info", { write: (line: string) => void lines.push(line) });
  log.error({ err }, "vendor call failed");
  expect(lines).to.have.length(1);
  return [err.message, String(err), err.stack ?? "", JSON.stringify(err), lines[0]!];
}

function expectNoSecrets(err: VendorError, ...secrets: string[]) {
  for (const secret of [API_KEY, ...secrets]) for (const s of shownOf(err)) expect(s).not.to.include(secret);
}

const VENDORS = [
  { provider: "vendorone_compatible" as const, start: startVendorOne, path: "/v1/chat/completions" },
  { provider: "vendortwo" as const, start: startVendorTwo, path: "/v1/messages" },
];

for (const vendor of VENDORS) {
  describe(`AI vendor ${vendor.provider} through its SDK`, () => {
    let server: VendorServer;
    beforeEach(async () => {
      server = await vendor.start();
    });
    afterEach(async () => {
      await server.close();
    });

    const request = (over: Partial<VendorRequest> = {}): VendorRequest => ({
      provider: vendor.provider,
      apiKey: API_KEY,
      baseUrl: server.url,
      model: "model-x-1",
      system: "You answer for the shop. Be brief.",
      messages: [
        { role: "user", content: "Hello, is the blue kettle in stock?" },
        { role: "assistant", content: "Yes, two left." },
        { role: "user", content: "Quotes \" and \\ and é, 日本, \u2028 line sep, 🙂 emoji" },
      ],
      maxOutputTokens: 300,
      ...over,
    });

    it("sends exactly vendorRequestBody (model, system, messages oldest first, max tokens) and parses text and usage", async () => {
      const req = request();
      const answer = await callVendor(req, { allowPrivate: LOOPBACK });
      expect(server.requests).to.have.length(1);
      const got = server.requests[0]!;
      expect(got.path).to.equal(vendor.path);
      expect(got.body).to.equal(answer.requestBody);
      expect(got.body).to.equal(vendorRequestBody(req));
      expect(createHash("sha256").update(got.body).digest("hex")).to.equal(createHash("sha256").update(vendorRequestBody(req)).digest("hex"));
      if (vendor.provider === "vendorone_compatible") {
        expect(got.json).to.deep.equal({
          model: "model-x-1",
          messages: [{ role: "system", content: req.system }, ...req.messages],
          max_tokens: 300,
        });
      } else {
        expect(got.json).to.deep.equal({ model: "model-x-1", max_tokens: 300, system: req.system, messages: req.messages });
      }
      expect(answer.text).to.equal(DEFAULT_VENDOR_TEXT);
      expect(answer.inputTokens).to.equal(DEFAULT_INPUT_TOKENS);
      expect(answer.outputTokens).to.equal(DEFAULT_OUTPUT_TOKENS);
      expect(answer.latencyMs).to.be.a("number").and.to.be.at.least(0);
    });

    it("reads the usage fields that count and the scripted text", async () => {
      server.reply(() => ({ text: "Ready on Monday.", inputTokens: 1234, outputTokens: 56 }));
      const answer = await callVendor(request(), { allowPrivate: LOOPBACK });
      expect(answer).to.include({ text: "Ready on Monday.", inputTokens: 1234, outputTokens: 56 });
    });

    it("sends the key in the vendor's header and nowhere else", async () => {
      await callVendor(request(), { allowPrivate: LOOPBACK });
      const { headers, body } = server.requests[0]!;
      if (vendor.provider === "vendorone_compatible") {
        expect(headers.authorization).to.equal(`Bearer ${API_KEY}`);
        expect(headers["x-api-key"]).to.equal(undefined);
      } else {
        expect(headers["x-api-key"]).to.equal(API_KEY);
        expect(headers.authorization).to.equal(undefined);
        expect(headers["anthropic-version"]).to.be.a("string");
      }
      expect(body).not.to.include(API_KEY);
    });

    it("ignores the SDK's environment variables: no organization, project, other token or custom log level", async () => {
      const vars = {
        OPENAI_ORG_ID: "org-from-env",
        OPENAI_PROJECT_ID: "proj-from-env",
        OPENAI_API_KEY: "sk-from-env",
        OPENAI_LOG: "debug",
        ANTHROPIC_API_KEY: "sk-ant-from-env",
        ANTHROPIC_AUTH_TOKEN: "token-from-env",
        ANTHROPIC_LOG: "debug",
      };
      const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
      const printed: string[] = [];
      const original = { log: console.log, info: console.info, debug: console.debug, warn: console.warn };
      Object.assign(process.env, vars);
      for (const m of ["log", "info", "debug", "warn"] as const) console[m] = (...args: unknown[]) => void printed.push(args.map(String).join(" "));
      try {
        await callVendor(request(), { allowPrivate: LOOPBACK });
      } finally {
        Object.assign(console, original);
        for (const [k, v] of Object.entries(saved)) {
          Reflect.deleteProperty(process.env, k);
          if (v !== undefined) process.env[k] = v;
        }
      }
      const headers = JSON.stringify(server.requests[0]!.headers);
      for (const value of Object.values(vars).filter((v) => v !== "debug")) expect(headers).not.to.include(value);
      expect(headers).to.include(API_KEY);
      expect(printed).to.deep.equal([]);
    });

    it("refuses an empty key as vendor_auth without a request", async () => {
      const err = await failure(callVendor(request({ apiKey: "" }), { allowPrivate: LOOPBACK }));
      expect(err.code).to.equal("vendor_auth");
      expect(server.requests).to.have.length(0);
    });

    it("answers after one retry when the vendor says 429 and then 200 (two requests)", async () => {
      let n = 0;
      server.reply(() => (++n === 1 ? { status: 429 } : { text: "second time lucky" }));
      const answer = await callVendor(request(), { allowPrivate: LOOPBACK });
      expect(answer.text).to.equal("second time lucky");
      expect(server.requests).to.have.length(2);
      expect(server.requests[1]!.body).to.equal(server.requests[0]!.body);
    });

    it("gives up with vendor_rate_limited after 429 three times (exactly three requests)", async () => {
      server.reply(() => ({ status: 429, headers: RETRY_NOW }));
      const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK }));
      expect(err.code).to.equal("vendor_rate_limited");
      expect(err.status).to.equal(429);
      expect(err.requestBody).to.equal(vendorRequestBody(request()));
      expectNoSecrets(err, "blue kettle", "You answer for the shop");
      expect(server.requests).to.have.length(3);
    });

    it("stops retrying at maxRetries: 0 retries means one request", async () => {
      server.reply(() => ({ status: 429, headers: RETRY_NOW }));
      const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK, maxRetries: 0 }));
      expect(err.code).to.equal("vendor_rate_limited");
      expect(server.requests).to.have.length(1);
    });

    for (const status of [500, 503]) {
      it(`gives up with vendor_unavailable after ${status} three times (exactly three requests)`, async () => {
        server.reply(() => ({ status, headers: RETRY_NOW }));
        const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK }));
        expect(err.code).to.equal("vendor_unavailable");
        expect(err.status).to.equal(status);
        expect(server.requests).to.have.length(3);
      });
    }

    it("ends a vendor that never answers with vendor_timeout at the call's one time bound, asked once (a timeout is not retried)", async () => {
      server.reply(() => ({ hang: true }));
      const started = Date.now();
      const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK, timeoutMs: 1_000 }));
      expect(Date.now() - started).to.be.at.least(1_000);
      expect(err.code).to.equal("vendor_timeout");
      expect(err.requestBody).to.equal(vendorRequestBody(request()));
      expectNoSecrets(err, "blue kettle", "You answer for the shop");
      expect(server.requests).to.have.length(1);
    });

    it("ends at the time bound while waiting to retry: the answer being retried is the failure, and no request follows", async () => {
      // The vendor asks for a wait far longer than the bound (the SDKs honour up to 60 s); the bound
      // leaves a loaded machine ample time for the first answer.
      server.reply(() => ({ status: 429, headers: { "retry-after": "50" } }));
      const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK, timeoutMs: 5_000 }));
      expect(err.code).to.equal("vendor_rate_limited");
      expect(err.status).to.equal(429);
      expect(server.requests).to.have.length(1);
    });

    it("retries within the bound: 429 then a vendor that never answers ends vendor_timeout after two requests", async () => {
      let n = 0;
      server.reply(() => (++n === 1 ? { status: 429, headers: RETRY_NOW } : { hang: true }));
      const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK, timeoutMs: 4_000 }));
      expect(err.code).to.equal("vendor_timeout");
      expect(server.requests).to.have.length(2);
    });

    it("answers within the timeout when the vendor is slow but not too slow", async () => {
      server.reply(() => ({ text: "slow but fine", delayMs: 50 }));
      const answer = await callVendor(request(), { allowPrivate: LOOPBACK, timeoutMs: 5_000, maxRetries: 0 });
      expect(answer.text).to.equal("slow but fine");
      expect(server.requests).to.have.length(1);
    });

    for (const status of [401, 403]) {
      it(`maps ${status} to vendor_auth without a retry, and shows neither the key nor the vendor's text`, async () => {
        const vendorText = `Incorrect API key provided: ${API_KEY}. Your prompt was: Hello, is the blue kettle in stock?`;
        server.reply(() => ({
          status,
          body:
            vendor.provider === "vendorone_compatible"
              ? { error: { message: vendorText, type: "invalid_request_error", param: null, code: "invalid_api_key" } }
              : { type: "error", error: { type: "authentication_error", message: vendorText } },
        }));
        const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK }));
        expect(err.code).to.equal("vendor_auth");
        expect(server.requests).to.have.length(1);
        expectNoSecrets(err, vendorText, "Incorrect API key", "blue kettle");
      });
    }

    for (const [status, code] of [
      [400, "vendor_bad_request"],
      [404, "vendor_bad_request"],
      [422, "vendor_bad_request"],
    ] as const) {
      it(`maps ${status} to ${code} without a retry`, async () => {
        server.reply(() => ({ status }));
        const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK }));
        expect(err.code).to.equal(code);
        expect(server.requests).to.have.length(1);
      });
    }

    it("does not follow a redirect (vendor_bad_response, the target never reached)", async () => {
      const target = await startOther();
      try {
        server.reply(() => ({ status: 307, body: {}, headers: { location: `${target.url}${vendor.path}` } }));
        const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK }));
        expect(err.code).to.equal("vendor_bad_response");
        expect(err.status).to.equal(307);
        expect(server.requests).to.have.length(1);
        expect(target.hits).to.equal(0);
      } finally {
        await target.close();
      }
    });

    it("refuses a loopback base_url with an empty allow list before any request, and accepts it with 127.0.0.0/8", async () => {
      const err = await failure(callVendor(request(), { allowPrivate: EMPTY_ALLOW_LIST }));
      expect(err.code).to.equal("vendor_address_refused");
      expect(err.requestBody).to.equal(null);
      expect(server.requests).to.have.length(0);
      expectNoSecrets(err);

      const other = await failure(callVendor(request(), { allowPrivate: parseAllowList(["10.0.0.0/8"]) }));
      expect(other.code).to.equal("vendor_address_refused");
      expect(server.requests).to.have.length(0);

      const answer = await callVendor(request(), { allowPrivate: LOOPBACK });
      expect(answer.text).to.equal(DEFAULT_VENDOR_TEXT);
      expect(server.requests).to.have.length(1);
    });

    it("connects to the address the policy checked, with the URL's host name in Host", async () => {
      const port = new URL(server.url).port;
      const base = server.url.replace(`127.0.0.1:${port}`, `models.example.test:${port}`);
      const lookup = fakeLookup({ "models.example.test": ["127.0.0.1"] });
      const answer = await callVendor(request({ baseUrl: base }), { allowPrivate: LOOPBACK, lookup });
      expect(answer.text).to.equal(DEFAULT_VENDOR_TEXT);
      expect(lookup.calls).to.deep.equal(["models.example.test"]);
      expect(server.requests[0]!.headers.host).to.equal(`models.example.test:${port}`);

      // The same name resolving to a range the allow list does not open: refused, no request made.
      const refusing = fakeLookup({ "models.example.test": ["127.0.0.1"] });
      const err = await failure(callVendor(request({ baseUrl: base }), { allowPrivate: parseAllowList(["10.0.0.0/8"]), lookup: refusing }));
      expect(err.code).to.equal("vendor_address_refused");
      expect(err.message).to.include("loopback");
      expect(server.requests).to.have.length(1);
    });

    it("maps an answer without text or without usage to vendor_bad_response", async () => {
      const bodies: unknown[] =
        vendor.provider === "vendorone_compatible"
          ? [
              { id: "chatcmpl-1", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "no usage" }, finish_reason: "stop" }] },
              { id: "chatcmpl-2", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: null, refusal: "no" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
              { id: "chatcmpl-3", object: "chat.completion", created: 1, model: "m", choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
              "not an object",
            ]
          : [
              { id: "msg_1", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "no usage" }], stop_reason: "end_turn" },
              { id: "msg_2", type: "message", role: "assistant", model: "m", content: [], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 0 } },
              { id: "msg_3", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "x" }], stop_reason: "end_turn", usage: { input_tokens: 1 } },
              "not an object",
            ];
      for (const body of bodies) {
        server.reply(() => ({ status: 200, body }));
        const err = await failure(callVendor(request(), { allowPrivate: LOOPBACK }));
        expect(err.code, JSON.stringify(body)).to.equal("vendor_bad_response");
      }
      expect(server.requests).to.have.length(bodies.length);
    });

    it("maps a vendor that cannot be reached to vendor_unavailable", async () => {
      const url = server.url;
      await server.close();
      const err = await failure(callVendor(request({ baseUrl: url }), { allowPrivate: LOOPBACK, maxRetries: 0 }));
      expect(err.code).to.equal("vendor_unavailable");
      server = await vendor.start(); // for afterEach
    });
  });
}

describe("AI vendor answers: shapes and size", () => {
  let server: VendorServer;
  afterEach(async () => {
    await server.close();
  });

  const request = (provider: VendorRequest["provider"]): VendorRequest => ({
    provider,
    apiKey: API_KEY,
    baseUrl: server.url,
    model: "m",
    system: "s",
    messages: [{ role: "user", content: "hi" }],
    maxOutputTokens: 32,
  });

  it("concatenates the Messages answer's text blocks, skipping others", async () => {
    server = await startVendorTwo();
    server.reply(() => ({
      status: 200,
      body: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [
          { type: "thinking", thinking: "hidden", signature: "x" },
          { type: "text", text: "Part one. " },
          { type: "text", text: "Part two." },
        ],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 7, output_tokens: 9 },
      },
    }));
    const answer = await callVendor(request("vendortwo"), { allowPrivate: LOOPBACK });
    expect(answer).to.include({ text: "Part one. Part two.", inputTokens: 7, outputTokens: 9 });
  });

  /** A Chat Completions answer whose JSON is exactly `size` bytes. */
  function answerOfSize(size: number): { body: unknown; text: string } {
    const shape = (text: string) => ({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
    const text = "a".repeat(size - JSON.stringify(shape("")).length);
    expect(JSON.stringify(shape(text)).length).to.equal(size);
    return { body: shape(text), text };
  }

  it(`reads an answer of exactly ${MAX_VENDOR_RESPONSE_BYTES} bytes and refuses one byte more (vendor_bad_response)`, async () => {
    server = await startVendorOne();
    const fits = answerOfSize(MAX_VENDOR_RESPONSE_BYTES);
    server.reply(() => ({ status: 200, body: fits.body }));
    const answer = await callVendor(request("vendorone_compatible"), { allowPrivate: LOOPBACK });
    expect(answer.text).to.equal(fits.text);

    server.reply(() => ({ status: 200, body: answerOfSize(MAX_VENDOR_RESPONSE_BYTES + 1).body }));
    const err = await failure(callVendor(request("vendorone_compatible"), { allowPrivate: LOOPBACK }));
    expect(err.code).to.equal("vendor_bad_response");
  });
});

/** A plain loopback server counting hits (a redirect's target). */
async function startOther(): Promise<{ url: string; hits: number; close(): Promise<void> }> {
  const state = { hits: 0 };
  const srv: Server = createServer((_req, res) => {
    state.hits++;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", () => resolve()));
  const { port } = srv.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get hits() {
      return state.hits;
    },
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}
