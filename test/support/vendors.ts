// Loopback model vendors for tests: node:http servers on 127.0.0.1 that speak each vendor's wire
// format (docs/ai.md), so the real SDKs talk to them over real HTTP.
// startVendorOne() answers POST /v1/chat/completions (Chat Completions), startVendorTwo() answers
// POST /v1/messages (Messages). Each records every request it receives (path, headers, the raw
// body and its JSON) and answers it as the test's script says: a text with usage, an HTTP error
// in the vendor's error shape, or no answer at all (hang). The default script answers a fixed text
// with fixed usage.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface VendorRequestRecord {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body as received (UTF-8). */
  body: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export type VendorScript =
  /** Answer `text` with this usage, after `delayMs`. Token counts default to DEFAULT_INPUT_TOKENS / DEFAULT_OUTPUT_TOKENS. */
  | { text: string; inputTokens?: number; outputTokens?: number; delayMs?: number }
  /** Answer this HTTP status; `body` (JSON) defaults to the vendor's error shape for the status. */
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** Read the request and never answer (the connection stays open until the client gives up or close()). */
  | { hang: true };

export interface VendorServer {
  /** The base URL to store as a credential's base_url: `http://127.0.0.1:P/v1` (vendorone), `http://127.0.0.1:P` (vendortwo). */
  url: string;
  /** Every request received, in order. */
  requests: VendorRequestRecord[];
  /** Sets the behaviour for the following requests (called once per request, in arrival order). */
  reply(fn: (req: VendorRequestRecord) => VendorScript | Promise<VendorScript>): void;
  close(): Promise<void>;
}

export const DEFAULT_VENDOR_TEXT = "Thanks for your message, we will get back to you shortly.";
export const DEFAULT_INPUT_TOKENS = 120;
export const DEFAULT_OUTPUT_TOKENS = 14;

type Wire = {
  path: string;
  /** The answer body for a text script. */
  answer(req: VendorRequestRecord, text: string, inputTokens: number, outputTokens: number): unknown;
  /** The error body for a status. */
  error(status: number): unknown;
  /** Whether the request carries a key where this vendor expects it. */
  authenticated(headers: IncomingHttpHeaders): boolean;
  /** Headers every answer carries (request ids). */
  headers(): Record<string, string>;
};

const hex = (n: number) => randomBytes(n).toString("hex");

function maxTokensOf(req: VendorRequestRecord): number | undefined {
  const n = req.json?.max_tokens ?? req.json?.max_completion_tokens;
  return typeof n === "number" ? n : undefined;
}

const VENDOR_ONE: Wire = {
  path: "/v1/chat/completions",
  answer(req, text, inputTokens, outputTokens) {
    const max = maxTokensOf(req);
    return {
      id: `chatcmpl-${hex(12)}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: typeof req.json?.model === "string" ? req.json.model : "unknown",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: text, refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: max !== undefined && outputTokens >= max ? "length" : "stop",
        },
      ],
      usage: {
        prompt_tokens: inputTokens,
        completion_tokens: outputTokens,
        total_tokens: inputTokens + outputTokens,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
      service_tier: "default",
      system_fingerprint: `fp_${hex(5)}`,
    };
  },
  error(status) {
    const [type, code, message] =
      status === 401
        ? ["invalid_request_error", "invalid_api_key", "Incorrect API key provided."]
        : status === 403
          ? ["invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported"]
          : status === 404
            ? ["invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."]
            : status === 429
              ? ["requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."]
              : status >= 500
                ? ["server_error", null, "The server had an error while processing your request. Sorry about that!"]
                : ["invalid_request_error", null, "Invalid request."];
    return { error: { message, type, param: null, code } };
  },
  authenticated: (h) => typeof h.authorization === "string" && /^Bearer \S+/.test(h.authorization),
  headers: () => ({ "x-request-id": `req_${hex(16)}` }),
};

const VENDOR_TWO: Wire = {
  path: "/v1/messages",
  answer(req, text, inputTokens, outputTokens) {
    const max = maxTokensOf(req);
    return {
      id: `msg_${hex(12)}`,
      type: "message",
      role: "assistant",
      model: typeof req.json?.model === "string" ? req.json.model : "unknown",
      content: [{ type: "text", text }],
      stop_reason: max !== undefined && outputTokens >= max ? "max_tokens" : "end_turn",
      stop_sequence: null,
      usage: {
        input_tokens: inputTokens,
        output_tokens: outputTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        service_tier: "standard",
      },
    };
  },
  error(status) {
    const [type, message] =
      status === 401
        ? ["authentication_error", "invalid x-api-key"]
        : status === 403
          ? ["permission_error", "Your API key does not have permission to use the specified resource."]
          : status === 404
            ? ["not_found_error", "The requested resource could not be found."]
            : status === 413
              ? ["request_too_large", "Request exceeds the maximum allowed number of bytes."]
              : status === 429
                ? ["rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."]
                : status === 529
                  ? ["overloaded_error", "Overloaded"]
                  : status >= 500
                    ? ["api_error", "Internal server error"]
                    : ["invalid_request_error", "Invalid request."];
    return { type: "error", error: { type, message }, request_id: `req_${hex(12)}` };
  },
  authenticated: (h) => typeof h["x-api-key"] === "string" && h["x-api-key"] !== "",
  headers: () => ({ "request-id": `req_${hex(12)}` }),
};

const defaultScript = (): VendorScript => ({ text: DEFAULT_VENDOR_TEXT });

async function start(wire: Wire, urlPath: string): Promise<VendorServer> {
  const requests: VendorRequestRecord[] = [];
  let script: (req: VendorRequestRecord) => VendorScript | Promise<VendorScript> = defaultScript;
  const timers = new Set<NodeJS.Timeout>();

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const path = (req.url ?? "/").split("?")[0]!;
        const record: VendorRequestRecord = { path, headers: { ...req.headers }, body, json };
        requests.push(record);

        const send = (status: number, payload: unknown, extra: Record<string, string> = {}) => {
          if (res.destroyed) return;
          const text = JSON.stringify(payload);
          res.writeHead(status, {
            "content-type": "application/json",
            "content-length": String(Buffer.byteLength(text)),
            ...wire.headers(),
            ...extra,
          });
          res.end(text);
        };

        if (req.method !== "POST" || path !== wire.path) return send(404, wire.error(404));
        if (!wire.authenticated(req.headers)) return send(401, wire.error(401));
        let s: VendorScript;
        try {
          s = await script(record);
        } catch {
          return send(500, wire.error(500));
        }
        if ("hang" in s) return;
        if ("status" in s) return send(s.status, s.body ?? wire.error(s.status), s.headers);
        const answer = wire.answer(record, s.text, s.inputTokens ?? DEFAULT_INPUT_TOKENS, s.outputTokens ?? DEFAULT_OUTPUT_TOKENS);
        if (!s.delayMs) return send(200, answer);
        const t = setTimeout(() => {
          timers.delete(t);
          send(200, answer);
        }, s.delayMs);
        timers.add(t);
      })();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${urlPath}`,
    requests,
    reply(fn) {
      script = fn;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A Chat Completions server (POST /v1/chat/completions); its url ends in /v1, as an OpenAI-compatible base_url does. */
export function startVendorOne(): Promise<VendorServer> {
  return start(VENDOR_ONE, "/v1");
}

/** A Messages server (POST /v1/messages); its url is the origin, as the second vendor's base_url is. */
export function startVendorTwo(): Promise<VendorServer> {
  return start(VENDOR_TWO, "");
}
