// One error envelope: services throw ApiError(code); this file alone knows how it becomes
// RFC 9457 problem+json. Unexpected errors are logged and answered as a bare 500.
import type { NextFunction, Request, Response } from "express";
import { ZodError } from "zod";
import type { PlanFeature, ProblemCode } from "../../contract/common.js";
import { DATABASE_RETRY_AFTER_S, isDatabaseUnavailable } from "../db/availability.js";

export const ERROR_CODES = {
  validation_failed: { status: 400, title: "The request is invalid" },
  unauthorized: { status: 401, title: "Authentication required" },
  plan_required: { status: 402, title: "Your plan does not include this feature" },
  forbidden: { status: 403, title: "Forbidden" },
  not_group_admin: { status: 403, title: "The linked number is not an admin of the group" },
  insufficient_scope: { status: 403, title: "The credential lacks the required scope" },
  cross_site_request: { status: 403, title: "Cross-site request refused" },
  not_found: { status: 404, title: "Not found" },
  method_not_allowed: { status: 405, title: "Method not allowed" },
  invalid_state: { status: 409, title: "The resource is not in a state that allows this" },
  connection_not_ready: { status: 409, title: "The connection is not connected" },
  idempotency_in_flight: { status: 409, title: "A request with this Idempotency-Key is in flight" },
  slug_taken: { status: 409, title: "The slug is taken" },
  already_member: { status: 409, title: "Already a member" },
  owner_required: { status: 409, title: "The workspace must keep an owner" },
  payload_too_large: { status: 413, title: "The request body is too large" },
  media_too_large: { status: 413, title: "The media is larger than this gateway serves" },
  gone: { status: 410, title: "The network no longer has it" },
  idempotency_mismatch: { status: 422, title: "Idempotency-Key reused with a different body" },
  rate_limited: { status: 429, title: "Too many requests" },
  quota_exceeded: { status: 429, title: "Plan quota exceeded" },
  internal: { status: 500, title: "Internal server error" },
  unavailable: { status: 503, title: "Service unavailable" },
  transport_unavailable: { status: 503, title: "No transport configured" },
} as const satisfies Record<ProblemCode, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail?: string,
    readonly extra: { errors?: FieldError[]; retryAfter?: number; headers?: Record<string, string>; [k: string]: unknown } = {},
  ) {
    super(detail ?? ERROR_CODES[code].title);
    this.status = ERROR_CODES[code].status;
  }

  static notFound(what = "resource"): ApiError {
    return new ApiError("not_found", `No such ${what}.`);
  }

  static invalidState(detail: string): ApiError {
    return new ApiError("invalid_state", detail);
  }

  static planRequired(feature: PlanFeature | string, plan: string): ApiError {
    return new ApiError("plan_required", `Your plan does not include ${feature}; the ${plan} plan does.`, { feature, required_plan: plan });
  }

  static validation(errors: FieldError[]): ApiError {
    return new ApiError("validation_failed", errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; "), { errors });
  }
}

export function zodFieldErrors(error: ZodError, prefix?: string): FieldError[] {
  // A field breaking two checks that share one message (a slug too long and off the pattern) is listed once.
  const seen = new Set<string>();
  return error.issues
    .map((i) => ({ path: [prefix, ...i.path].filter((p) => p !== undefined && p !== "").join("."), message: i.message }))
    .filter((e) => {
      const key = `${e.path}\u0000${e.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

export function problemBody(err: ApiError, requestId: string): Record<string, unknown> {
  const { errors, retryAfter: _r, headers: _h, ...rest } = err.extra;
  return {
    type: `https://docs.svc-gateway.dev/errors/${err.code}`,
    title: ERROR_CODES[err.code].title,
    status: err.status,
    detail: err.message,
    code: err.code,
    request_id: requestId,
    ...(errors ? { errors } : {}),
    ...rest,
  };
}

export function sendProblem(res: Response, err: ApiError): void {
  const requestId = String(res.locals.requestId ?? "unknown");
  if (err.extra.retryAfter !== undefined) res.setHeader("Retry-After", String(err.extra.retryAfter));
  for (const [k, v] of Object.entries(err.extra.headers ?? {})) res.setHeader(k, v);
  res.status(err.status).type("application/problem+json").send(JSON.stringify(problemBody(err, requestId)));
}

/**
 * PostgreSQL's refusals of text it cannot hold: 22021 character_not_in_repertoire ("invalid byte
 * sequence for encoding UTF8: 0x00"), 22P05 untranslatable_character (a NUL escape in jsonb).
 */
function isUnstorableText(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  const code = e.driverError?.code ?? e.code;
  return code === "22021" || code === "22P05";
}

/** The last Express middleware: maps everything thrown to problem+json. */
export function errorMiddleware(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof ApiError) return sendProblem(res, err);
  const status = (err as { status?: number; type?: string }).status;
  // Body-parser failures (too large, malformed, unsupported charset or encoding) are the client's fault.
  if (status === 413) return sendProblem(res, new ApiError("payload_too_large"));
  // Express's own refusal of a path whose percent-escapes do not decode (a URIError, status 400).
  if (err instanceof URIError && status === 400) return sendProblem(res, new ApiError("validation_failed", "The request path could not be decoded (a malformed percent-escape)."));
  if (status !== undefined && status >= 400 && status < 500) {
    return sendProblem(res, new ApiError("validation_failed", "The request body could not be read."));
  }
  // Input the edge's checks missed that PostgreSQL cannot hold (a NUL in text, bytes that are not
  // UTF-8): the client's input, not a fault of ours. Kept visible to the operator as a warning.
  if (isUnstorableText(err)) {
    req.log?.warn({ err }, "input the database cannot store reached a query");
    return sendProblem(res, new ApiError("validation_failed", "The request contains a character that cannot be stored (such as NUL, U+0000)."));
  }
  // An outage is not a bug: the client is told to retry (with the same Idempotency-Key for a send).
  if (isDatabaseUnavailable(err)) {
    req.log?.warn({ err }, "database unavailable");
    return sendProblem(res, new ApiError("unavailable", "The database is unavailable; retry later.", { retryAfter: DATABASE_RETRY_AFTER_S, unavailable: ["database"] }));
  }
  req.log?.error({ err }, "unhandled error");
  sendProblem(res, new ApiError("internal", "An unexpected error occurred; quote the request_id when reporting it."));
}
