// Input rules every route shares, checked after authentication (an unauthenticated caller learns
// nothing about a route's input) and before the contract's validation. Each refusal is a 400
// naming what was wrong; nothing is dropped or altered silently.
// - Strings: PostgreSQL cannot store the NUL character (U+0000) in text or jsonb, and a lone
//   UTF-16 surrogate cannot be encoded as UTF-8 (the driver would store U+FFFD, or fail with a 500).
// - `__proto__` as a key: zod rebuilds free-form objects (metadata, context) by assignment, which
//   would drop it without a word.
// - A query parameter the route does not declare (routes without a query schema take none; those
//   with one are strict in the contract).
// - The Idempotency-Key header given twice: Node would join both into one key "a, b". A query
//   parameter given twice likewise (none is a list). Authorization and Content-Type given twice
//   are refused earlier, before anything reads them (refuseRepeatedHeaders): Node keeps the first
//   and drops the others silently, so the credential or the body's type would be a guess.
// Bodies are at most 64 levels deep (server/http/json-body.ts); the walk is iterative anyway.
import type { RequestHandler, Request } from "express";
import type { AppRoute } from "@ts-rest/core";
import { ApiError, type FieldError } from "./errors.js";

const MAX_ERRORS = 10;

export const checkInput: RequestHandler = (req, _res, next) => {
  const errors: FieldError[] = [];
  errors.push(...repeatedHeaders(req, ["idempotency-key"]));
  const route = (req as Request & { tsRestRoute?: AppRoute }).tsRestRoute;
  if (route && !route.query && !route.path.startsWith("/v1/oauth/")) {
    for (const name of Object.keys(req.query as object)) errors.push({ path: `query.${name}`, message: "is not a parameter of this operation" });
  } else if (route && !route.path.startsWith("/v1/oauth/")) {
    // No parameter is a list: a repeated one (`?limit=1&limit=2`) arrives as an array, which the
    // contract would refuse with a message about its type rather than the repetition.
    for (const [name, value] of Object.entries(req.query as object)) if (Array.isArray(value)) errors.push({ path: `query.${name}`, message: "must be given once" });
  }
  findBadInput(req.params, "path", errors);
  findBadInput(req.query, "query", errors);
  findBadInput(req.body, "body", errors);
  next(errors.length ? ApiError.validation(errors.slice(0, MAX_ERRORS)) : undefined);
};

/**
 * The string rules above for input that reaches the database outside the contract's routes (the
 * sandbox's control API): what they refuse, each with its path under `rootPath`.
 */
export function unstorableStrings(value: unknown, rootPath: string): FieldError[] {
  const errors: FieldError[] = [];
  findBadInput(value, rootPath, errors);
  return errors;
}

/** A 400 field error for each of `lowerNames` sent more than once. */
function repeatedHeaders(req: Request, lowerNames: readonly string[]): FieldError[] {
  const present = lowerNames.filter((name) => req.headers[name] !== undefined);
  if (present.length === 0) return [];
  const counts = new Map<string, number>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const raw = req.rawHeaders[i]!;
    // Lower-cased only when its length could make it one of them (every request has a dozen headers).
    if (!present.some((name) => name.length === raw.length)) continue;
    const name = raw.toLowerCase();
    if (present.includes(name)) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return present.filter((name) => counts.get(name)! > 1).map((name) => ({ path: `headers.${name}`, message: "must be given once" }));
}

/** Headers whose meaning a repetition makes ambiguous, refused on every route before they are read. */
const ONCE_ONLY_HEADERS = ["authorization", "content-type"] as const;

export const refuseRepeatedHeaders: RequestHandler = (req, _res, next) => {
  const errors = repeatedHeaders(req, ONCE_ONLY_HEADERS);
  next(errors.length ? ApiError.validation(errors) : undefined);
};

/** Why a string may not be stored, or null. */
export function stringProblem(s: string): string | null {
  if (s.includes("\u0000")) return "the NUL character (U+0000)";
  // Node 20 has String.prototype.isWellFormed (ES2024); the TypeScript lib here stops at ES2023.
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) return "a lone UTF-16 surrogate (U+D800 to U+DFFF without its pair)";
  return null;
}

/**
 * Depth-first in document order, with an explicit stack. A child's path is built only when it is
 * needed (a container to descend into, or an error): most values are fine strings.
 */
function findBadInput(root: unknown, rootPath: string, errors: FieldError[]): void {
  const todo: [unknown, string, string | number | null][] = [[root, rootPath, null]];
  while (todo.length && errors.length < MAX_ERRORS) {
    const [value, parent, key] = todo.pop()!;
    if (typeof value === "string") {
      const problem = stringProblem(value);
      if (problem) errors.push({ path: pathOf(parent, key), message: `must not contain ${problem}` });
    } else if (Array.isArray(value)) {
      const path = pathOf(parent, key);
      for (let i = value.length - 1; i >= 0; i--) todo.push([value[i], path, i]);
    } else if (value !== null && typeof value === "object") {
      const path = pathOf(parent, key);
      const keys = Object.keys(value);
      for (const k of keys) {
        const problem = stringProblem(k);
        if (problem) errors.push({ path: pathOf(path, k), message: `names must not contain ${problem}` });
        else if (k === "__proto__") errors.push({ path: pathOf(path, k), message: "__proto__ is not accepted as a name" });
      }
      for (let i = keys.length - 1; i >= 0; i--) todo.push([(value as Record<string, unknown>)[keys[i]!], path, keys[i]!]);
    }
  }
}

function pathOf(parent: string, key: string | number | null): string {
  return key === null ? parent : `${parent}.${typeof key === "number" ? key : printable(key)}`;
}

/** A key as it can appear in an error's path (the error is JSON: NUL and lone halves escaped). */
function printable(key: string): string {
  // eslint-disable-next-line no-control-regex -- the NUL character is exactly what is escaped here
  return key.replace(/\u0000|\p{Cs}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
