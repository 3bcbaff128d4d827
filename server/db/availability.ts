// What "the database is unavailable" means, in one place: the HTTP error mapper answers 503 for
// it, the background loops back off on it, the start-up wait retries on it. Everything else (a
// constraint violation, a bug in a statement) is not an outage and is not retried.
import { backoffMs } from "../backoff.js";

/** Seconds a client is asked to wait (Retry-After) when the database is unavailable. */
export const DATABASE_RETRY_AFTER_S = 5;

/** Socket-level failures: the server refused, reset, or did not answer in time. */
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * SQLSTATEs of a server that is going away or not there yet: class 08 (connection exception),
 * 57P01-57P03 (admin/crash shutdown, cannot connect now), 53300 (too many connections).
 */
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|53300)$/;

/** pg and pg-pool report a lost or unobtainable connection as plain Errors with these messages. */
const UNAVAILABLE_MESSAGES = [
  "Connection terminated",
  "connection timeout",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error",
  "Client was closed and is not queryable",
  "Cannot use a pool after calling end",
];

/** True when `err` (or the error it wraps: TypeORM's QueryFailedError carries pg's) says the database cannot be reached. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 4; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === "string" && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.test(code))) return true;
    if (typeof message === "string" && UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return true;
    // AggregateError (a host with several addresses, all refused) and wrapped causes.
    const inner = (e as { errors?: unknown[] }).errors?.[0] ?? (e as { driverError?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
    e = inner;
  }
  return false;
}

/** One line saying why, for logs: the code and message of the innermost useful error. */
export function unavailableReason(err: unknown): string {
  const e = (err as { errors?: unknown[] }).errors?.[0] ?? err;
  const { code, message } = e as { code?: unknown; message?: unknown };
  const text = typeof message === "string" && message ? message : String(e);
  return typeof code === "string" && !text.includes(code) ? `${code}: ${text}` : text;
}

/** A dependency that did not come up within its wait: the message is the one line the process exits with. */
export class DependencyUnavailableError extends Error {}

export interface WaitOptions {
  /** What is waited for, in log lines: "the database at db.internal:5432". */
  what: string;
  /** How long to keep trying, from the first attempt; 0 makes one attempt. */
  waitMs: number;
  /** The setting that bounds the wait, named in the log lines and the final error. */
  setting: string;
  /** Whether a failure is worth another attempt (the dependency is away) or final (wrong password, bad schema). */
  retryable: (err: unknown) => boolean;
  logger: { warn(obj: object, msg: string): void };
  /** First delay; doubled per attempt up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs `attempt` until it succeeds, retrying failures that `retryable` accepts with backoff and a
 * log line each time, for at most `waitMs`; then throws DependencyUnavailableError with one line.
 */
export async function waitForDependency<T>(attempt: () => Promise<T>, options: WaitOptions): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!options.retryable(err)) throw err;
      const reason = unavailableReason(err);
      const delay = backoffMs(n, options.baseDelayMs ?? 500, options.maxDelayMs ?? 10_000);
      const waited = Date.now() - started;
      if (waited + delay > options.waitMs) {
        throw new DependencyUnavailableError(
          `gave up waiting for ${options.what} after ${Math.round(waited / 1000)} s (${options.setting}=${Math.round(options.waitMs / 1000)}): ${reason}`,
        );
      }
      options.logger.warn(
        { attempt: n, retry_in_ms: delay, reason },
        `waiting for ${options.what}: ${reason}; attempt ${n}, next in ${(delay / 1000).toFixed(1)} s (gives up after ${options.setting}=${Math.round(options.waitMs / 1000)} s)`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** host:port of a connection URL, for log lines (never the URL: it may carry a password). */
export function endpointOf(url: string): string {
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return "(unparsable URL)";
  }
}

/**
 * Runs `write` again while it fails because the database is unavailable, for up to `maxMs`, then
 * throws the last error. For outcomes that exist only in memory until written (an engine's answer
 * to a hand-off, a webhook receiver's answer): written late, they need not be produced again.
 * Only for writes that are safe to repeat (a lost answer may hide a commit).
 */
export async function retryWhileUnavailable<T>(write: () => Promise<T>, maxMs: number): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await write();
    } catch (err) {
      const delay = backoffMs(n, 200, 2_000);
      if (!isDatabaseUnavailable(err) || Date.now() - started + delay > maxMs) throw err;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
