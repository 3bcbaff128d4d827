// The per-call options every client method accepts besides the route's own parameters. A file of
// its own, importing nothing, so that the SDK's public declarations stay plain TypeScript.

/** Options of one call, beside its params, query, headers and body. */
export interface CallOptions {
  /** Passed to fetch: `signal` to cancel, `cache`, `keepalive`… (method, headers and body are the SDK's). */
  fetchOptions?: Omit<RequestInit, "method" | "headers" | "body">;
  /** Headers added to this call only. */
  extraHeaders?: Record<string, string | undefined>;
}
