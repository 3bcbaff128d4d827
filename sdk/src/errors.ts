// Typed errors: every non-2xx answer of the gateway is application/problem+json (RFC 9457) with a
// stable `code` and the `request_id`; `expectOk` turns such an answer into a thrown SvcApiError.
import { UnknownStatusError } from "@ts-rest/core";
import type { Problem, ProblemCode } from "./types.gen.js";

/** Any response of the ts-rest client. */
export interface AnyResponse {
  status: number;
  body: unknown;
  headers: Headers;
}

export type SuccessStatus = 200 | 201 | 202 | 203 | 204 | 205 | 206 | 207 | 208 | 226;

/** The 2xx members of a route's response union. */
export type OkResponse<R> = R extends { status: SuccessStatus } ? R : never;
/** The union of a route's 2xx bodies. */
export type OkBody<R> = R extends { status: SuccessStatus; body: infer B } ? B : never;

/**
 * Whether `body` is a problem+json document of the gateway (type, title, status, code, request_id).
 * Checked by shape, not against the list of codes, so that a newer gateway's code still reads as
 * a problem.
 */
export function isProblem(body: unknown): body is Problem {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  return (
    typeof b.type === "string" &&
    typeof b.title === "string" &&
    typeof b.status === "number" &&
    typeof b.code === "string" &&
    typeof b.request_id === "string" &&
    (b.detail === undefined || typeof b.detail === "string") &&
    (b.errors === undefined || Array.isArray(b.errors))
  );
}

/** A problem's `code`, or `http_<status>` for an error answer that was not a problem (a proxy's page). */
export type SvcErrorCode = ProblemCode | `http_${number}`;

/** Seconds from a Retry-After header (delta-seconds or HTTP-date); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, nowMs = Date.now()): number | undefined {
  if (value == null || value.trim() === "") return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

export class SvcApiError extends Error {
  override readonly name = "SvcApiError";
  /** HTTP status of the answer. */
  readonly status: number;
  /** The problem's stable `code` (e.g. `validation_failed`), or `http_<status>` when the body was not a problem. */
  readonly code: SvcErrorCode;
  /** The problem's `request_id`, else the `X-Request-Id` header; quote it when reporting an issue. */
  readonly requestId: string | undefined;
  /** The problem+json body; undefined when the answer was not one (e.g. a proxy's HTML page). */
  readonly problem: Problem | undefined;
  /** The raw body, whatever it was. */
  readonly body: unknown;
  /** Seconds from Retry-After (429, and 409 `idempotency_in_flight`). */
  readonly retryAfter: number | undefined;
  readonly headers: Headers | undefined;

  constructor(response: { status: number; body: unknown; headers?: Headers }) {
    const problem = isProblem(response.body) ? response.body : undefined;
    const code: SvcErrorCode = problem?.code ?? `http_${response.status}`;
    super(`${response.status} ${code}: ${problem?.detail ?? problem?.title ?? "request failed"}`);
    this.status = response.status;
    this.code = code;
    this.problem = problem;
    this.body = response.body;
    this.headers = response.headers;
    this.requestId = problem?.request_id ?? response.headers?.get("x-request-id") ?? undefined;
    this.retryAfter = parseRetryAfter(response.headers?.get("retry-after"));
  }

  /** Field errors of a `validation_failed` problem. */
  get errors(): { path: string; message: string }[] {
    return this.problem?.errors ?? [];
  }
}

/**
 * A request that got no answer: the connection was refused or reset, the name did not resolve,
 * or every attempt timed out (`timedOut`). Raised after the retries the request allowed. The
 * request may or may not have reached the gateway: a send repeated with the same Idempotency-Key
 * is safe.
 */
export class SvcConnectionError extends Error {
  override readonly name = "SvcConnectionError";
  readonly method: string;
  readonly url: string;
  /** Attempts made, retries included. */
  readonly attempts: number;
  /** Whether the last attempt ran out of the client's `timeout`. */
  readonly timedOut: boolean;

  constructor(details: { method: string; url: string; attempts: number; timedOut: boolean; cause: unknown }) {
    const reason = details.timedOut ? "timed out" : describeCause(details.cause);
    super(`${details.method} ${details.url}: no answer (${reason}) after ${details.attempts} attempt${details.attempts === 1 ? "" : "s"}`, { cause: details.cause });
    this.method = details.method;
    this.url = details.url;
    this.attempts = details.attempts;
    this.timedOut = details.timedOut;
  }
}

// fetch reports "fetch failed" and keeps the reason (ECONNREFUSED, ENOTFOUND…) in its cause.
function describeCause(cause: unknown): string {
  const inner = (cause as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof inner?.code === "string") return inner.code;
  if (cause instanceof Error) return cause.message;
  return String(cause);
}

/**
 * Awaits a client call and returns its body when the status is 2xx, typed as the union of the
 * route's 2xx bodies; otherwise throws SvcApiError (also for a status the contract does not declare).
 *
 *     const me = await expectOk(client.workspace.whoami()); // Whoami
 */
export async function expectOk<R extends AnyResponse>(result: R | Promise<R>): Promise<OkBody<R>> {
  const response = await settle(result);
  if (response.status >= 200 && response.status < 300) return response.body as OkBody<R>;
  throw new SvcApiError(response);
}

/**
 * Awaits a client call and returns the response narrowed to the given statuses; throws SvcApiError
 * for any other status. For tests and callers that expect a specific error:
 *
 *     const res = await expectStatus(client.messages.send({ body }), 409);
 *     res.body.code; // Problem
 */
export async function expectStatus<R extends AnyResponse, S extends R["status"]>(
  result: R | Promise<R>,
  ...statuses: S[]
): Promise<Extract<R, { status: S }>> {
  const response = await settle(result);
  if ((statuses as number[]).includes(response.status)) return response as Extract<R, { status: S }>;
  throw new SvcApiError(response);
}

// With throwOnUnknownStatus the client rejects on a status missing from the contract (a 500, a
// proxy's 502); that is still an HTTP answer, so report it as one.
async function settle<R extends AnyResponse>(result: R | Promise<R>): Promise<R> {
  try {
    return await result;
  } catch (err) {
    if (err instanceof UnknownStatusError) throw new SvcApiError(err.response);
    throw err;
  }
}
