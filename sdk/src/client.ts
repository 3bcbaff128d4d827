// The typed client: ts-rest's client over the contract, with a fetcher that adds Idempotency-Keys,
// a timeout per attempt, and retries what is safe to retry. Each call answers `{status, body,
// headers}`, typed per route by the generated SvcClient (types.gen.ts), which equals what ts-rest
// infers from the contract but costs a consumer's compiler nothing to check.
import { initClient, type ApiFetcher } from "@ts-rest/core";
import { contract } from "../../contract/index.js";
import type { SvcClientArgs } from "./client-args.js";
import { SvcConnectionError } from "./errors.js";
import { requiresIdempotencyKey, withIdempotencyKey } from "./idempotency.js";
import { DEFAULT_RETRY_POLICY, retryDelayAfterNetworkError, retryDelayAfterResponse, sleep, type RetryPolicy } from "./retry.js";
import type { SvcClient } from "./types.gen.js";

export type { SvcClient };
export type { CallOptions } from "./call-options.js";

/** Default time for one attempt, from sending the request to the end of the answer's body. */
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface ClientOptions {
  /** The gateway's address, e.g. `https://gateway.example.com` (no `/v1`). */
  baseUrl: string;
  /** An API key (`svc_live_…` / `svc_test_…`), sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** A dashboard session for server-side use, sent as the `Cookie` header, e.g. `svc_session=…`. */
  cookie?: string;
  /**
   * Whether a browser sends its cookies (fetch's `credentials`): `"include"` for a page on another
   * origin than the gateway, `"same-origin"` (fetch's default) for the dashboard it serves.
   */
  credentials?: RequestInit["credentials"];
  /** The fetch to use; default the global one, looked up at each call. */
  fetch?: typeof fetch;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** Retries after the first attempt (5xx, network errors, 429); default 2, 0 disables. */
  maxRetries?: number;
  /** First retry backoff in milliseconds, doubling on each retry (with jitter); default 200. */
  retryBaseDelayMs?: number;
  /**
   * Milliseconds one attempt may take, answer body included; default 60,000. A timed-out attempt
   * is retried like a network failure, and the last one raises SvcConnectionError (`timedOut`).
   */
  timeout?: number;
}

export function createClient(options: ClientOptions): SvcClient {
  const baseHeaders: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) baseHeaders["authorization"] = `Bearer ${options.apiKey}`;
  if (options.cookie !== undefined) baseHeaders["cookie"] = options.cookie;
  const policy: RetryPolicy = {
    ...DEFAULT_RETRY_POLICY,
    ...(options.maxRetries !== undefined && { maxRetries: Math.max(0, Math.floor(options.maxRetries)) }),
    ...(options.retryBaseDelayMs !== undefined && { baseDelayMs: Math.max(0, options.retryBaseDelayMs) }),
  };
  const fetchImpl: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new RangeError("timeout must be a positive number of milliseconds");
  const args: SvcClientArgs = {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    baseHeaders,
    api: gatewayFetcher(fetchImpl, policy, timeoutMs, options.credentials, options.cookie !== undefined),
    throwOnUnknownStatus: true,
    validateResponse: false,
    jsonQuery: false,
  };
  // The generated SvcClient is checked equal to ts-rest's inferred type (test/sdk-types.check.ts).
  return initClient(contract, args) as unknown as SvcClient;
}

/**
 * ts-rest's fetcher (tsRestFetchApi) with the caller's fetch, an Idempotency-Key on the routes that
 * declare one, a timeout per attempt, and retries. The key is fixed before the first attempt, so
 * every retry of a send carries the same key and the server replays instead of sending twice.
 * A request that never got an answer ends as SvcConnectionError; the caller's own abort is
 * passed through as it is.
 */
function gatewayFetcher(fetchImpl: typeof fetch, policy: RetryPolicy, timeoutMs: number, credentials: RequestInit["credentials"], sendsCookie: boolean): ApiFetcher {
  return async ({ route, path, method, headers, body, fetchOptions }) => {
    let sentHeaders = withIdempotencyKey(route, headers);
    // The gateway takes a change made with a session cookie only as JSON or from its own origin
    // (its cross-site protection): a change without a body (a DELETE, sign-out) says JSON too.
    if (sendsCookie && method !== "GET" && method !== "HEAD" && !Object.keys(sentHeaders).some((h) => h.toLowerCase() === "content-type")) {
      sentHeaders = { ...sentHeaders, "content-type": "application/json" };
    }
    const request = { method, idempotencyKey: requiresIdempotencyKey(route) };
    const signal = fetchOptions?.signal;
    for (let retriesDone = 0; ; retriesDone++) {
      let response: Awaited<ReturnType<ApiFetcher>>;
      const timeout = AbortSignal.timeout(timeoutMs);
      try {
        const attemptSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
        response = await exchange(fetchImpl, path, { ...fetchOptions, ...(credentials && { credentials }), method, headers: sentHeaders, body, signal: attemptSignal });
      } catch (err) {
        if (signal?.aborted) throw err;
        const delay = retryDelayAfterNetworkError(policy, request, retriesDone, signal);
        if (delay === undefined) throw new SvcConnectionError({ method, url: path, attempts: retriesDone + 1, timedOut: timeout.aborted, cause: err });
        await sleep(delay, signal);
        continue;
      }
      const delay = retryDelayAfterResponse(policy, request, retriesDone, response);
      if (delay === undefined) return response;
      await sleep(delay, signal);
    }
  };
}

// Body decoding as in tsRestFetchApi (JSON for application/*json, text for text/*, else a Blob),
// except that an empty answer (204) is `undefined`, as the contract declares it.
async function exchange(fetchImpl: typeof fetch, url: string, init: RequestInit) {
  const res = await fetchImpl(url, init);
  const contentType = res.headers.get("content-type") ?? "";
  let body: unknown;
  if (res.status === 204 || res.status === 205 || res.status === 304) {
    await res.body?.cancel();
    body = undefined;
  } else if (contentType.includes("application/") && contentType.includes("json")) {
    const text = await res.text();
    body = text === "" ? undefined : JSON.parse(text);
  } else if (contentType.includes("text/")) {
    body = await res.text();
  } else {
    body = await res.blob();
  }
  return { status: res.status, body, headers: res.headers };
}
