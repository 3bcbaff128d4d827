// The one backoff of the gateway: every wait that grows with failures (database reconnects, the
// polling loops, engine retries, sandbox callbacks, Baileys reconnects, webhook retries) is computed here.

export interface BackoffOptions {
  /** The delay is scaled by a random factor in [1 - jitter, 1 + jitter]; 0 for none. Default 0.2. */
  jitter?: number;
  random?: () => number;
}

/** Exponential backoff with jitter: attempt 1 waits about `baseMs`, doubling up to `maxMs` (before jitter). */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, options: BackoffOptions = {}): number {
  return jittered(Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1)), options);
}

/** `ms` scaled by a random factor in [1 - jitter, 1 + jitter], so failures together do not retry in lockstep. */
export function jittered(ms: number, { jitter = 0.2, random = Math.random }: BackoffOptions = {}): number {
  return Math.round(ms * (1 - jitter + 2 * jitter * random()));
}
