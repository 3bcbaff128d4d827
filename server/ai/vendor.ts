// One call to a model vendor through its official SDK (docs/ai.md):
// `vendorone_compatible` speaks Chat Completions through `openai`, `vendortwo` speaks Messages
// through `@anthropic-ai/sdk`. Both SDKs get the same custom fetch, which puts every connection
// through the outbound address policy (docs/webhooks.md, "Where deliveries may go"): the URL is checked with
// checkWebhookUrl before each attempt, the socket connects to the checked address (the host is
// never resolved again), and redirects are returned as they are, never followed. The SDKs'
// `maxRetries` (429, 408, 409, 5xx and connection failures) apply within ONE time bound for the
// whole call, retries and the waits between them included: when it passes the call is aborted,
// so a vendor that never answers is asked once, not once per retry.
//
// Nothing here logs: both SDKs are built with logging off and tracing off, and a VendorError's
// message is our own words (status, attempt count), never the vendor's answer, which may echo the
// prompt, and never the key.
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type { Agent } from "undici";
import { performance } from "node:perf_hooks";
import { checkWebhookUrl, type AllowList, type Lookup, type UrlCheckOptions } from "../outbound/address-policy.js";
import { pinnedLookup } from "../outbound/safe-request.js";

export interface VendorRequest {
  provider: "vendorone_compatible" | "vendortwo";
  /** Plaintext, never logged. */
  apiKey: string;
  /** null: the vendor's default (https://api.openai.com/v1, https://api.anthropic.com). */
  baseUrl: string | null;
  model: string;
  /** The policy's system instruction. */
  system: string;
  /** Oldest first. */
  messages: { role: "user" | "assistant"; content: string }[];
  maxOutputTokens: number;
}

export interface VendorAnswer {
  text: string;
  inputTokens: number;
  outputTokens: number;
  /** The exact JSON body the vendor received (the last attempt's). */
  requestBody: string;
  /** Milliseconds from the start of the call to the parsed answer, retries included. */
  latencyMs: number;
}

export type VendorErrorCode =
  | "vendor_timeout"
  | "vendor_rate_limited"
  | "vendor_unavailable"
  | "vendor_auth"
  | "vendor_bad_request"
  | "vendor_address_refused"
  | "vendor_bad_response";

/**
 * The SDKs and undici, loaded at the first call rather than at start: a gateway that never calls a
 * vendor does not pay for them (about a third of a second of CPU at each start, and their memory).
 */
type Sdks = { OpenAI: typeof OpenAI; Anthropic: typeof Anthropic; Agent: typeof Agent; fetch: typeof import("undici").fetch };
let sdks: Promise<Sdks> | undefined;
const loadSdks = () =>
  (sdks ??= Promise.all([import("openai"), import("@anthropic-ai/sdk"), import("undici")]).then(([openai, anthropic, undici]) => ({
    OpenAI: openai.default,
    Anthropic: anthropic.default,
    Agent: undici.Agent,
    fetch: undici.fetch,
  })));

export class VendorError extends Error {
  override readonly name = "VendorError";
  /**
   * The body of the last attempt handed to a connection (for the run's prompt_sha256); null when no
   * request was made. Not enumerable, so a logger serialising the error never prints the prompt.
   */
  declare readonly requestBody: string | null;
  constructor(
    readonly code: VendorErrorCode,
    /** Our own description; never vendor text, never the key. */
    message: string,
    requestBody: string | null,
    /** The vendor's HTTP status, when it answered with one. */
    readonly status: number | null = null,
  ) {
    super(message);
    Object.defineProperty(this, "requestBody", { value: requestBody, enumerable: false, writable: false });
  }
}

export interface VendorOptions {
  /** The outbound address policy's allow-list (= ctx.config.webhooks.allowPrivate). */
  allowPrivate: AllowList;
  /** The whole call's time bound, every attempt and wait between them included; default 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt on 429/5xx/connection failures; default 2. */
  maxRetries?: number;
  /** Resolver for the address check (tests); defaults to the system's. */
  lookup?: Lookup;
}

export const DEFAULT_VENDOR_TIMEOUT_MS = 30_000;
/** How much later than the call's bound the SDKs' per-attempt timeout is set (so it never fires first). */
const SDK_TIMEOUT_MARGIN_MS = 5_000;
export const DEFAULT_VENDOR_MAX_RETRIES = 2;
export const VENDORONE_DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const VENDORTWO_DEFAULT_BASE_URL = "https://api.anthropic.com";
/** A vendor answer larger than this is cut off and counts as vendor_bad_response (answers are a few KiB). */
export const MAX_VENDOR_RESPONSE_BYTES = 1024 * 1024;

type ChatParams = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type MessagesParams = Anthropic.MessageCreateParamsNonStreaming;

/**
 * The params object handed to the SDK. Both SDKs send JSON.stringify(params) as the body, so the
 * key order here is the byte order on the wire. Chat Completions gets `max_tokens` (not the newer
 * `max_completion_tokens`): every compatible server (vLLM, Ollama, OpenRouter…) accepts it.
 */
function chatParams(req: VendorRequest): ChatParams {
  return {
    model: req.model,
    messages: [
      { role: "system", content: req.system },
      ...req.messages.map((m) => ({ role: m.role, content: m.content })),
    ],
    max_tokens: req.maxOutputTokens,
  };
}

function messagesParams(req: VendorRequest): MessagesParams {
  return {
    model: req.model,
    max_tokens: req.maxOutputTokens,
    system: req.system,
    messages: req.messages.map((m) => ({ role: m.role, content: m.content })),
  };
}

/** The exact JSON body the SDK will send; its SHA-256 hex is a run's prompt_sha256, its UTF-8 length the worst-case input tokens. */
export function vendorRequestBody(req: VendorRequest): string {
  return JSON.stringify(req.provider === "vendorone_compatible" ? chatParams(req) : messagesParams(req));
}

/** Why the wrapper refused to connect: set before the SDK's attempt is aborted. */
class AddressRefused extends Error {}

interface Attempt {
  /** The body of the last attempt handed to a connection. */
  body: string | null;
  /** The policy refused the URL; the reason (ours, no secrets). */
  refused: string | null;
  /** Requests handed to a connection. */
  sent: number;
  /** The status the last request was answered with; null while it waits for an answer. */
  answered: number | null;
  /** The call's time bound passed (the call was aborted for it). */
  outOfTime: boolean;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? Object.assign(new Error("This operation was aborted"), { name: "AbortError" });
}

/** Rejects as soon as `signal` aborts, so a slow DNS lookup cannot outlast the SDK's timeout. */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | null | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/** A response body stream that errors once more than `limit` bytes have passed. */
function limitBody(body: ReadableStream<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > limit) controller.error(new Error(`vendor response larger than ${limit} bytes`));
        else controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * The fetch both SDKs use for one callVendor: checks the URL before every attempt, connects to
 * the checked address through an undici Agent whose lookup answers only that address, never
 * follows a redirect, records the body sent, and caps the body read.
 */
function policyFetch({ Agent, fetch: undiciFetch }: Sdks, policy: UrlCheckOptions, attempt: Attempt, abortAll: AbortController, agents: Map<string, Agent>) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    // No attempt starts once the call is over (its time bound passed, or the address was refused).
    if (abortAll.signal.aborted) throw abortError(abortAll.signal);
    const check = await raceSignal(checkWebhookUrl(url, policy), init?.signal);
    if (!check.ok) {
      attempt.refused = check.reason;
      abortAll.abort(new AddressRefused(check.reason)); // the SDK does not retry an aborted call
      throw new AddressRefused(check.reason);
    }
    const { address, family } = check.addresses[0]!;
    const key = `${family}/${address}`;
    let agent = agents.get(key);
    if (!agent) {
      agent = new Agent({ connect: { lookup: pinnedLookup(address, family) } });
      agents.set(key, agent);
    }
    attempt.body = typeof init?.body === "string" ? init.body : null;
    attempt.sent += 1;
    attempt.answered = null;
    const res = await undiciFetch(url, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      redirect: "manual",
      dispatcher: agent,
    });
    attempt.answered = res.status;
    const nullBody = res.status === 204 || res.status === 205 || res.status === 304;
    const body = res.body && !nullBody ? limitBody(res.body as ReadableStream<Uint8Array>, MAX_VENDOR_RESPONSE_BYTES) : null;
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers as unknown as Headers });
  };
}

const attemptsText = (n: number) => (n === 1 ? "1 attempt" : `${n} attempts`);

function statusError(status: number, attempts: number, body: string | null): VendorError {
  const tries = attemptsText(attempts);
  if (status === 429) return new VendorError("vendor_rate_limited", `vendor answered 429 (rate limited) after ${tries}`, body, status);
  if (status === 401 || status === 403) return new VendorError("vendor_auth", `vendor refused the credential (${status})`, body, status);
  if (status >= 500) return new VendorError("vendor_unavailable", `vendor answered ${status} after ${tries}`, body, status);
  if (status >= 400) return new VendorError("vendor_bad_request", `vendor refused the request (${status})`, body, status);
  return new VendorError("vendor_bad_response", `vendor answered ${status}, not an answer (redirects are not followed)`, body, status);
}

function mapError({ OpenAI, Anthropic }: Sdks, err: unknown, attempt: Attempt, timeoutMs: number): VendorError {
  if (err instanceof VendorError) return err;
  if (attempt.refused !== null) return new VendorError("vendor_address_refused", `vendor address refused: ${attempt.refused}`, null);
  const body = attempt.body;
  if (attempt.outOfTime) {
    // Out of time while waiting to retry an answered attempt: that answer is the failure. While a
    // request was waiting for its answer: a timeout (the vendor may have billed it).
    if (attempt.answered !== null && attempt.answered >= 300) return statusError(attempt.answered, attempt.sent, body);
    return new VendorError("vendor_timeout", `no answer from the vendor within ${timeoutMs} ms (${attemptsText(attempt.sent)})`, body);
  }
  if (err instanceof OpenAI.APIConnectionTimeoutError || err instanceof Anthropic.APIConnectionTimeoutError) {
    return new VendorError("vendor_timeout", `no answer from the vendor in time (${attemptsText(attempt.sent)})`, body);
  }
  if (err instanceof OpenAI.APIConnectionError || err instanceof Anthropic.APIConnectionError) {
    return new VendorError("vendor_unavailable", `could not reach the vendor (${attemptsText(attempt.sent)})`, body);
  }
  if (err instanceof OpenAI.APIError || err instanceof Anthropic.APIError) {
    return statusError(typeof err.status === "number" ? err.status : 0, attempt.sent, body);
  }
  // A body that is not JSON, or larger than the cap.
  return new VendorError("vendor_bad_response", "vendor answer could not be read", body);
}

function count(n: unknown): number | null {
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : null;
}

function badResponse(what: string, body: string | null): VendorError {
  return new VendorError("vendor_bad_response", `vendor answer has no ${what}`, body);
}

/** Calls the vendor once (with the SDK's retries) and returns its text and usage. */
export async function callVendor(req: VendorRequest, opts: VendorOptions): Promise<VendorAnswer> {
  const started = performance.now();
  const loaded = await loadSdks();
  const { OpenAI, Anthropic } = loaded;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_VENDOR_TIMEOUT_MS;
  // The SDKs' own per-attempt timeout never comes first: a timed-out attempt would be retried.
  const timeout = timeoutMs + SDK_TIMEOUT_MARGIN_MS;
  const maxRetries = opts.maxRetries ?? DEFAULT_VENDOR_MAX_RETRIES;
  const attempt: Attempt = { body: null, refused: null, sent: 0, answered: null, outOfTime: false };
  const abortAll = new AbortController();
  const agents = new Map<string, Agent>();
  if (req.apiKey === "") throw new VendorError("vendor_auth", "the credential has no API key", null);
  const bound = setTimeout(() => {
    attempt.outOfTime = true;
    abortAll.abort(new Error(`the vendor call's time bound of ${timeoutMs} ms passed`));
  }, timeoutMs);
  const fetch = policyFetch(loaded, { allowPrivate: opts.allowPrivate, ...(opts.lookup ? { lookup: opts.lookup } : {}) }, attempt, abortAll, agents) as unknown as typeof globalThis.fetch;
  try {
    let text: string | null;
    let input: number | null;
    let output: number | null;
    if (req.provider === "vendorone_compatible") {
      const client = new OpenAI({
        apiKey: req.apiKey,
        baseURL: req.baseUrl ?? VENDORONE_DEFAULT_BASE_URL,
        // Explicit nulls: the SDK would otherwise read OPENAI_* variables of the gateway's environment.
        adminAPIKey: null,
        organization: null,
        project: null,
        webhookSecret: null,
        timeout,
        maxRetries,
        fetch,
        logLevel: "off",
      });
      // Raced against the bound too: the SDK's wait before a retry does not listen to the signal.
      const answer = await raceSignal(client.chat.completions.create(chatParams(req), { signal: abortAll.signal }), abortAll.signal);
      const content: unknown = answer?.choices?.[0]?.message?.content;
      text = typeof content === "string" ? content : null;
      input = count(answer?.usage?.prompt_tokens);
      output = count(answer?.usage?.completion_tokens);
    } else {
      const client = new Anthropic({
        apiKey: req.apiKey,
        authToken: null,
        baseURL: req.baseUrl ?? VENDORTWO_DEFAULT_BASE_URL,
        webhookKey: null,
        // SDK 1.x sends an apiKey as `Authorization: Bearer`; the Messages API's own header is
        // `x-api-key`, which every Messages-compatible server accepts (docs/decisions.md).
        defaultHeaders: { "X-Api-Key": req.apiKey, Authorization: null },
        timeout,
        maxRetries,
        fetch,
        logLevel: "off",
        openTelemetry: false,
      });
      const answer = await raceSignal(client.messages.create(messagesParams(req), { signal: abortAll.signal }), abortAll.signal);
      const blocks: unknown = answer?.content;
      text = Array.isArray(blocks)
        ? blocks
            .filter((b): b is { type: "text"; text: string } => b?.type === "text" && typeof b.text === "string")
            .map((b) => b.text)
            .join("")
        : null;
      input = count(answer?.usage?.input_tokens);
      output = count(answer?.usage?.output_tokens);
    }
    if (text === null || text.trim() === "") throw badResponse("text", attempt.body);
    if (input === null || output === null) throw badResponse("usage", attempt.body);
    return {
      text,
      inputTokens: input,
      outputTokens: output,
      requestBody: attempt.body ?? vendorRequestBody(req),
      latencyMs: Math.round(performance.now() - started),
    };
  } catch (err) {
    throw mapError(loaded, err, attempt, timeoutMs);
  } finally {
    clearTimeout(bound);
    await Promise.allSettled([...agents.values()].map((a) => a.destroy()));
  }
}
