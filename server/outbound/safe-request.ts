// Requests an address that address-policy.ts has already checked (a webhook, a vendor call, a
// media fetch), without resolving the
// host again: the socket's lookup is replaced by one that answers with exactly the checked address.
// The URL's hostname still drives the Host header, TLS SNI and certificate validation (which stays
// on). Redirects are never followed (node's request does not follow them; a 3xx is returned as its
// status). The response body is read up to a small limit and discarded. One timer bounds the whole
// exchange: connect, TLS, request and response headers.
import * as http from "node:http";
import * as https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { performance } from "node:perf_hooks";
import { checkWebhookUrl, type UrlCheckOptions } from "./address-policy.js";

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

export type DeliveryFailureReason =
  | "blocked" // the URL or an address it resolves to is refused by policy
  | "dns" // the host could not be resolved
  | "timeout" // no response headers within the timeout (covers DNS, connect, TLS and the wait)
  | "connection_refused"
  | "connection_reset"
  | "unreachable" // no route to the host or network
  | "tls" // handshake or certificate failure (wrong name, untrusted, expired…)
  | "network"; // any other socket error

export class WebhookDeliveryError extends Error {
  override readonly name = "WebhookDeliveryError";
  constructor(
    readonly reason: DeliveryFailureReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface PostRequest {
  /** POST by default; GET (no body) for documents the gateway reads, e.g. OAuth client metadata. */
  method?: "POST" | "GET";
  headers?: Record<string, string>;
  body: string | Uint8Array;
  /** Keep the response body (up to maxResponseBytes) in the result instead of discarding it. */
  keepBody?: boolean;
  /** Total time for connect + TLS + response headers. Default 10 s. */
  timeoutMs?: number;
  /** Response body bytes read (then discarded) before the connection is dropped. Default 64 KiB. */
  maxResponseBytes?: number;
  /** Trust anchors to use instead of the system's (tests, private CAs). Validation is never turned off. */
  ca?: string | Buffer | Array<string | Buffer>;
}

export interface CheckedPost extends PostRequest {
  url: URL | string;
  /** The checked address to connect to (from checkWebhookUrl). */
  address: string;
  family: number;
}

export interface PostResult {
  /** The response status; a 3xx is returned as is (not followed) and counts as a failure for the caller. */
  status: number;
  /** Milliseconds from the start of the request to the response headers. */
  latencyMs: number;
  /** The response's Retry-After header, as sent. */
  retryAfter?: string;
  /** The address the connection was made to. */
  address: string;
  /** Response body bytes read before it was discarded (at most maxResponseBytes plus one chunk). */
  bodyBytes: number;
  /** With keepBody: the body read, and whether it reached the read limit. */
  body?: Buffer;
  truncated?: boolean;
}

/** Headers the caller may not set: they are the transport's, or would redirect SNI/Host. */
const RESERVED_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade"]);

const TLS_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "HOSTNAME_MISMATCH",
  "EPROTO",
]);

export function classifyError(err: unknown): WebhookDeliveryError {
  if (err instanceof WebhookDeliveryError) return err;
  const e = err as NodeJS.ErrnoException;
  const code = e?.code ?? "";
  const message = e?.message ?? String(err);
  const reason: DeliveryFailureReason =
    code === "ECONNREFUSED"
      ? "connection_refused"
      : code === "ECONNRESET" || code === "EPIPE"
        ? "connection_reset"
        : code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "EADDRNOTAVAIL"
          ? "unreachable"
          : code === "ETIMEDOUT"
            ? "timeout"
            : TLS_CODES.has(code) || code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code.startsWith("CERT_")
              ? "tls"
              : "network";
  return new WebhookDeliveryError(reason, code ? `${code}: ${message}` : message, { cause: err });
}

/** A socket lookup that answers every query with the one checked address (media fetches use it too). */
export function pinnedLookup(address: string, family: number): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/**
 * POSTs `body` to `url`, connecting to `address` (already checked) and never resolving the
 * hostname. Resolves with the status once the response body has ended or reached the read limit;
 * rejects with a WebhookDeliveryError when no response headers arrive (timeout, refused, TLS…).
 */
export function postToCheckedAddress(req: CheckedPost): Promise<PostResult> {
  const url = typeof req.url === "string" ? new URL(req.url) : req.url;
  const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const { address, family } = req;

  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return Promise.reject(new WebhookDeliveryError("blocked", `scheme ${url.protocol} not allowed`));
  }
  if (isIP(address) !== family) {
    return Promise.reject(new WebhookDeliveryError("blocked", `${address} is not an IPv${family} address`));
  }
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) !== 0 && host !== address) {
    return Promise.reject(new WebhookDeliveryError("blocked", `URL names ${host} but the checked address is ${address}`));
  }

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  const method = req.method ?? "POST";
  const body = method === "GET" ? Buffer.alloc(0) : typeof req.body === "string" ? Buffer.from(req.body) : req.body;
  if (method === "POST") headers["Content-Length"] = String(body.byteLength);
  headers["Connection"] = "close";

  const options: https.RequestOptions = {
    method,
    headers,
    agent: false, // a fresh socket per delivery: never a pooled one connected for another check
    lookup: pinnedLookup(address, family),
    ...(url.protocol === "https:" && req.ca !== undefined ? { ca: req.ca } : {}),
  };

  return new Promise<PostResult>((resolve, reject) => {
    const started = performance.now();
    let settled = false;
    let latencyMs = 0;
    let status = 0;
    let retryAfter: string | undefined;
    let bodyBytes = 0;
    const kept: Buffer[] = [];
    let gotResponse = false;
    const timer = setTimeout(() => {
      if (gotResponse) succeed();
      else fail(new WebhookDeliveryError("timeout", `no response within ${timeoutMs} ms`));
    }, timeoutMs);

    const succeed = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        status,
        latencyMs,
        ...(retryAfter !== undefined ? { retryAfter } : {}),
        address,
        bodyBytes,
        ...(req.keepBody ? { body: Buffer.concat(kept).subarray(0, maxBytes), truncated: bodyBytes >= maxBytes } : {}),
      });
      request.destroy();
    };
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(classifyError(err));
      request.destroy();
    };

    const request = (url.protocol === "https:" ? https : http).request(url, options, (res) => {
      gotResponse = true;
      latencyMs = Math.round(performance.now() - started);
      status = res.statusCode ?? 0;
      retryAfter = res.headers["retry-after"];
      res.on("data", (chunk: Buffer) => {
        bodyBytes += chunk.length;
        if (req.keepBody) kept.push(chunk);
        if (bodyBytes >= maxBytes) succeed();
      });
      res.on("end", succeed);
      // After the status line the answer is known: a broken or abandoned body does not change it.
      res.on("error", succeed);
      res.on("close", succeed);
    });

    request.on("error", (err) => (gotResponse ? succeed() : fail(err)));
    request.end(body);
  });
}

export interface DeliveryResult extends PostResult {
  url: URL;
}

/**
 * Delivery-time entry point: checks the URL again (resolving the host once), then posts to the
 * first resolved address. `timeoutMs` covers the lookup as well as the request. Every URL a
 * tenant or a client gives the gateway is reached through here (docs/webhooks.md, "Where deliveries may go").
 */
export const deliverWebhook = requestThroughPolicy;

export async function requestThroughPolicy(url: string, opts: UrlCheckOptions, request: PostRequest): Promise<DeliveryResult> {
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new WebhookDeliveryError("timeout", `could not resolve the host within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  let check: Awaited<ReturnType<typeof checkWebhookUrl>>;
  try {
    check = await Promise.race([checkWebhookUrl(url, opts), deadline]);
  } finally {
    clearTimeout(timer);
  }
  if (!check.ok) throw new WebhookDeliveryError(check.kind === "dns" ? "dns" : "blocked", check.reason);

  const first = check.addresses[0]!;
  const remaining = timeoutMs - (performance.now() - started);
  if (remaining <= 0) throw new WebhookDeliveryError("timeout", `no response within ${timeoutMs} ms`);
  const result = await postToCheckedAddress({
    ...request,
    url: check.url,
    address: first.address,
    family: first.family,
    timeoutMs: remaining,
  });
  return { ...result, url: check.url };
}
