// When the client repeats a request. Repeating is only safe when it cannot do the work twice: the
// request was refused before any work (429), the method is idempotent, or the request carries an
// Idempotency-Key (the server replays the first answer instead of sending again).
import { parseRetryAfter } from "./errors.js";

export interface RetryPolicy {
  /** Retries after the first attempt; 0 disables retrying. */
  maxRetries: number;
  /** First backoff; doubles on each retry (up to 200 ms, 400 ms, 800 ms…, each jittered down to half). */
  baseDelayMs: number;
  /** A Retry-After longer than this is not waited for: the answer is returned as it is. */
  maxRetryAfterSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 2, baseDelayMs: 200, maxRetryAfterSeconds: 10 };

export interface RetriedRequest {
  method: string;
  /** Whether the request carries an Idempotency-Key. */
  idempotencyKey: boolean;
}

// RFC 9110 9.2.2.
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

function repeatable(request: RetriedRequest): boolean {
  return request.idempotencyKey || IDEMPOTENT_METHODS.has(request.method.toUpperCase());
}

/**
 * Exponential backoff with jitter: between half and all of `baseDelayMs * 2^retriesDone`, so that
 * clients failed by the same outage do not retry in step.
 */
export function backoffMs(policy: RetryPolicy, retriesDone: number, random: () => number = Math.random): number {
  const ceiling = policy.baseDelayMs * 2 ** retriesDone;
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * Milliseconds to wait before repeating the request that got `response`, or undefined to hand the
 * response to the caller. `retriesDone` counts the retries already made.
 */
export function retryDelayAfterResponse(
  policy: RetryPolicy,
  request: RetriedRequest,
  retriesDone: number,
  response: { status: number; headers: Headers; body: unknown },
): number | undefined {
  if (retriesDone >= policy.maxRetries) return undefined;
  const { status } = response;
  // 409 idempotency_in_flight on a retry means our own earlier attempt (whose answer was lost) is
  // still running: wait for it and get its replayed answer. A first attempt's 409 is the caller's
  // own concurrency and is returned.
  const ownAttemptInFlight =
    status === 409 && retriesDone > 0 && request.idempotencyKey && (response.body as { code?: unknown } | null)?.code === "idempotency_in_flight";
  if (status === 429 || ownAttemptInFlight) {
    const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
    if (retryAfter === undefined) return backoffMs(policy, retriesDone);
    // Retrying sooner than the server asked is certain to fail again (e.g. a monthly quota).
    return retryAfter > policy.maxRetryAfterSeconds ? undefined : retryAfter * 1000;
  }
  if (status >= 500 && repeatable(request)) return backoffMs(policy, retriesDone);
  return undefined;
}

/** Milliseconds to wait before repeating a request that failed without an answer, or undefined to rethrow. */
export function retryDelayAfterNetworkError(policy: RetryPolicy, request: RetriedRequest, retriesDone: number, signal?: AbortSignal | null): number | undefined {
  if (signal?.aborted || retriesDone >= policy.maxRetries || !repeatable(request)) return undefined;
  return backoffMs(policy, retriesDone);
}

export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
