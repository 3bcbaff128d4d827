// Request bodies. JSON.parse alone would accept what we must refuse (duplicate keys, last one
// winning; nesting deep enough to exhaust any recursive consumer; invalid UTF-8 silently turned
// into U+FFFD), so the raw bytes are checked first, in one pass with an explicit stack (no
// recursion), and only then parsed. body-parser still reads the stream (chunked bodies, gzip,
// the byte limit); the Content-Length check answers before any byte is read.
import express, { type RequestHandler } from "express";
import { ApiError, type FieldError } from "./errors.js";

/** Largest accepted request body (docs/decisions.md). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deepest accepted JSON nesting: objects and arrays inside each other, the outermost counting 1. */
export const MAX_JSON_DEPTH = 64;

/** Content types read as JSON bodies. */
export const JSON_TYPES = ["application/json", "application/*+json"];

/**
 * Whether a Content-Type header names one of JSON_TYPES, body or not (`req.is` answers only for a
 * request with a body).
 */
export function isJsonContentType(header: string | undefined): boolean {
  const type = header?.split(";")[0]!.trim().toLowerCase();
  return type !== undefined && (type === "application/json" || /^application\/[^/]+\+json$/.test(type));
}

export function tooLarge(): ApiError {
  return new ApiError("payload_too_large", `The request body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).`);
}

/** 413 on the declared length alone: an oversized body is never read. */
export const refuseOversizedBodies: RequestHandler = (req, res, next) => {
  const declared = req.headers["content-length"];
  if (declared === undefined || Number(declared) <= MAX_BODY_BYTES) return next();
  // The unread body stays on the socket: close it rather than parse it as the next request.
  res.setHeader("Connection", "close");
  next(tooLarge());
};

const readRaw = express.raw({ type: JSON_TYPES, limit: MAX_BODY_BYTES });
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Reads and parses JSON bodies; anything refused is a 400 before a handler sees it. */
export const jsonBody: RequestHandler = (req, res, next) => {
  readRaw(req, res, (err?: unknown) => {
    if (err) return next(readError(err));
    if (!Buffer.isBuffer(req.body)) return next();
    try {
      req.body = parseJsonBody(req.body);
      next();
    } catch (e) {
      next(e);
    }
  });
};

/** Throws a 400 ApiError for anything but one well-formed, acceptable JSON object or array. */
export function parseJsonBody(raw: Buffer): unknown {
  if (raw.length === 0) return {};
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw ApiError.validation([{ path: "body", message: "is not valid UTF-8" }]);
  }
  const first = /\S/.exec(text)?.[0];
  // A scalar (null, a number, a string) may be valid JSON, but no request body of this API is one.
  if (first !== "{" && first !== "[") throw isJsonScalar(text) ? new ApiError("validation_failed", "The request body must be a JSON object.") : notJson();
  // The cheap pass first: depth, and the number of keys written. Duplicates are what make that
  // number larger than the parsed value's; only then (or too deep, or not JSON) does the full
  // check run, to name the place.
  const written = countKeys(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    parsed = NOT_JSON;
  }
  if (written < 0 || parsed === NOT_JSON || keysOf(parsed) !== written) {
    const refused = checkJsonStructure(text);
    if (refused) throw ApiError.validation([refused]);
    if (parsed === NOT_JSON) throw notJson();
  }
  return parsed;
}

const NOT_JSON = Symbol("not JSON");

/**
 * The keys written in `text`, counted as checkJsonStructure reads them (a string in an object
 * where a key is expected), or -1 past MAX_JSON_DEPTH. No sets, no slices: one pass over the text.
 */
function countKeys(text: string): number {
  let keys = 0;
  let depth = 0;
  // Per open container: 1 an object, 0 an array; and whether a key comes next.
  const isObject = new Uint8Array(MAX_JSON_DEPTH + 1);
  const expectKey = new Uint8Array(MAX_JSON_DEPTH + 1);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (depth >= MAX_JSON_DEPTH) return -1;
      depth++;
      isObject[depth] = c === 0x7b ? 1 : 0;
      expectKey[depth] = 1;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      if (depth > 0) depth--;
    } else if (c === 0x2c /* , */) {
      expectKey[depth] = 1;
    } else if (c === 0x22 /* " */) {
      i = closingQuote(text, i);
      if (isObject[depth] && expectKey[depth]) {
        expectKey[depth] = 0;
        keys++;
      }
    }
  }
  return keys;
}

/** The own keys of a parsed JSON value and everything in it (iterative: bodies are checked for depth first). */
function keysOf(root: unknown): number {
  let keys = 0;
  const todo: unknown[] = [root];
  while (todo.length) {
    const value = todo.pop();
    if (Array.isArray(value)) {
      for (const v of value) if (v !== null && typeof v === "object") todo.push(v);
    } else if (value !== null && typeof value === "object") {
      for (const k in value) {
        keys++;
        const v = (value as Record<string, unknown>)[k];
        if (v !== null && typeof v === "object") todo.push(v);
      }
    }
  }
  return keys;
}

/** body-parser's refusals (too large while reading, unsupported charset or encoding) as ours. */
function readError(err: unknown): unknown {
  const status = (err as { status?: unknown }).status;
  if (status === 413) return tooLarge();
  if (typeof status === "number" && status >= 400 && status < 500) return new ApiError("validation_failed", "The request body could not be read as JSON.");
  return err;
}

function isJsonScalar(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function notJson(): ApiError {
  return new ApiError("validation_failed", "The request body is not valid JSON.");
}

interface Frame {
  /** Keys seen so far; null for an array. */
  keys: Set<string> | null;
  path: string;
  /** Next element's index (arrays) or the key just read (objects). */
  index: number;
  key: string;
  expectKey: boolean;
}

/**
 * Depth and duplicate keys, over the raw text without recursion. Lenient about syntax: whatever
 * it lets through, JSON.parse judges next, so it only has to be right on well-formed input.
 */
export function checkJsonStructure(text: string): FieldError | null {
  const stack: Frame[] = [];
  const childPath = (f: Frame | undefined) => (f ? `${f.path}.${f.keys ? f.key : f.index}` : "body");
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1];
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_JSON_DEPTH) return { path: childPath(top), message: `nests deeper than ${MAX_JSON_DEPTH} levels` };
      stack.push({ keys: c === 0x7b ? new Set() : null, path: childPath(top), index: 0, key: "", expectKey: true });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      if (top) {
        top.index++;
        top.expectKey = true;
      }
    } else if (c === 0x22 /* " */) {
      const start = i;
      i = closingQuote(text, i);
      if (top?.keys && top.expectKey) {
        top.expectKey = false;
        let key = text.slice(start + 1, i);
        if (key.includes("\\")) {
          try {
            key = JSON.parse(text.slice(start, i + 1)) as string;
          } catch {
            return null; // malformed: JSON.parse says so
          }
        }
        top.key = key;
        if (top.keys.has(key)) return { path: childPath(top), message: "is given twice in one object (duplicate key)" };
        top.keys.add(key);
      }
    }
  }
  return null;
}

/** Index of the quote that closes the string opening at `open` (text.length when there is none). */
function closingQuote(text: string, open: number): number {
  for (let from = open + 1; ; ) {
    const q = text.indexOf('"', from);
    if (q < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
    from = q + 1;
  }
}

