// The typed client: ts-rest's client over the contract, with a fetcher that adds Idempotency-Keys
// and retries what is safe to retry. Each call answers `{status, body, headers}`, typed per route.
import { initClient, type ApiFetcher, type InitClientReturn } from "@ts-rest/core";
import { contract, type Contract } from "../../contract/index.js";
import { requiresIdempotencyKey, withIdempotencyKey } from "./idempotency.js";
import { DEFAULT_RETRY_POLICY, retryDelayAfterNetworkError, retryDelayAfterResponse, sleep, type RetryPolicy } from "./retry.js";

export interface ClientOptions {
  /** The gateway's address, e.g. `https://gateway.example.com` (no `/v1`). */
  baseUrl: string;
  /** An API key (`svc_live_…` / `svc_test_…`), sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** A dashboard session for server-side use, sent as the `Cookie` header, e.g. `svc_session=…`. */
  cookie?: string;
  /** The fetch to use; default the global one, looked up at each call. */
  fetch?: typeof fetch;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** Retries after the first attempt (5xx, network errors, 429); default 2, 0 disables. */
  maxRetries?: number;
  /** First retry backoff in milliseconds, doubling on each retry; default 200. */
  retryBaseDelayMs?: number;
}

/** The client arguments createClient hands to ts-rest; they shape the per-route request types. */
export interface SvcClientArgs {
  baseUrl: string;
  baseHeaders: Record<string, string>;
  api: ApiFetcher;
  throwOnUnknownStatus: true;
  validateResponse: false;
  jsonQuery: false;
}

/** The ts-rest client of the whole contract: `client.messages.send(…)`, `client.workspace.whoami()`… */
export type SvcClient = InitClientReturn<Contract, SvcClientArgs>;

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
  const args: SvcClientArgs = {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    baseHeaders,
    api: gatewayFetcher(fetchImpl, policy),
    throwOnUnknownStatus: true,
    validateResponse: false,
    jsonQuery: false,
  };
  return initClient(contract, args);
}

/**
 * ts-rest's fetcher (tsRestFetchApi) with the caller's fetch, an Idempotency-Key on the routes that
 * declare one, and retries. The key is fixed before the first attempt, so every retry of a send
 * carries the same key and the server replays instead of sending twice.
 */
function gatewayFetcher(fetchImpl: typeof fetch, policy: RetryPolicy): ApiFetcher {
  return async ({ route, path, method, headers, body, fetchOptions }) => {
    const sentHeaders = withIdempotencyKey(route, headers);
    const request = { method, idempotencyKey: requiresIdempotencyKey(route) };
    const signal = fetchOptions?.signal;
    for (let retriesDone = 0; ; retriesDone++) {
      let response: Awaited<ReturnType<ApiFetcher>>;
      try {
        response = await exchange(fetchImpl, path, { ...fetchOptions, method, headers: sentHeaders, body });
      } catch (err) {
        const delay = retryDelayAfterNetworkError(policy, request, retriesDone, signal);
        if (delay === undefined) throw err;
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
