// The webhook signature scheme (docs/webhooks.md), written once: the server signs with
// signWebhookPayload, receivers check with verifyWebhook.
//
//   Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=…]
//
// Several v1 entries may be present (one per active secret while a secret is rotated); one match is
// enough. Depends on node:crypto only, so the server can import this file without the client.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookEventPayload } from "./webhooks-events.js";

export type { WebhookEventDataMap, WebhookEventPayload } from "./webhooks-events.js";

export const SIGNATURE_HEADER = "Svc-Signature";
export const TIMESTAMP_HEADER = "Svc-Timestamp";
/** Receivers reject timestamps older than this (docs/webhooks.md). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationFailure =
  | "missing_signature"
  | "malformed_signature"
  | "timestamp_too_old"
  | "timestamp_in_future"
  | "signature_mismatch"
  /** The signature is valid but the body is not an event object. */
  | "invalid_payload";

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string = reason.replace(/_/g, " "),
  ) {
    super(message);
  }
}

/** Request headers as Node (`req.headers`), Express or fetch (`Headers`) hand them over. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | Headers;

function hmacHex(secret: string, timestamp: number, payload: string | Uint8Array): Buffer {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(payload).digest();
}

/**
 * The `Svc-Signature` header value for `payload` (the exact bytes sent) signed at `timestamp`
 * (unix seconds, the same value as `Svc-Timestamp`).
 */
export function signWebhookPayload(secret: string, timestamp: number, payload: string | Uint8Array): string {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError("timestamp must be a non-negative integer of unix seconds");
  return `t=${timestamp},v1=${hmacHex(secret, timestamp, payload).toString("hex")}`;
}

export interface VerifyWebhookOptions {
  /** The raw request body, unparsed (e.g. from `express.raw({ type: "application/json" })`). */
  payload: string | Uint8Array;
  headers: WebhookHeaders;
  /** The endpoint's signing secret, as returned when it was created. */
  secret: string;
  /** Largest accepted age, and lead, of the signed timestamp; default 300 seconds. */
  toleranceSeconds?: number;
  /** The current time in unix seconds; default the clock. */
  now?: number;
}

function readHeader(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const lower = name.toLowerCase();
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== lower || value === undefined) continue;
    values.push(...(Array.isArray(value) ? value : [value]));
  }
  return values.length > 0 ? values.join(",") : undefined;
}

interface ParsedSignature {
  timestamp: number;
  signatures: string[];
}

function parseSignatureHeader(value: string, timestampHeader: string | undefined): ParsedSignature {
  const timestamps = new Set<string>();
  const signatures: string[] = [];
  for (const part of value.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1).trim();
    if (key === "t") timestamps.add(val);
    else if (key === "v1") signatures.push(val);
    // Other schemes (v0, a future v2) are ignored.
  }
  if (timestampHeader !== undefined) timestamps.add(timestampHeader.trim());
  // The signed t is authoritative; a different Svc-Timestamp beside it means tampered headers.
  const [t, ...others] = [...timestamps];
  if (t === undefined || others.length > 0 || !/^\d{1,15}$/.test(t)) {
    throw new WebhookVerificationError("malformed_signature", "Svc-Signature needs exactly one t=<unix seconds> (matching Svc-Timestamp)");
  }
  if (signatures.length === 0) throw new WebhookVerificationError("malformed_signature", "Svc-Signature has no v1 signature");
  return { timestamp: Number(t), signatures };
}

function anySignatureMatches(expected: Buffer, candidates: string[]): boolean {
  let matched = false;
  for (const candidate of candidates) {
    if (!/^[0-9a-fA-F]+$/.test(candidate) || candidate.length !== expected.length * 2) continue;
    // Equal lengths checked above: timingSafeEqual never sees buffers of different sizes.
    if (timingSafeEqual(expected, Buffer.from(candidate, "hex"))) matched = true;
  }
  return matched;
}

function parseEvent(payload: string | Uint8Array): WebhookEventPayload {
  const text = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new WebhookVerificationError("invalid_payload", "webhook body is not JSON");
  }
  const e = event as Partial<Record<"id" | "type", unknown>> | null;
  if (typeof e !== "object" || e === null || Array.isArray(e) || typeof e.id !== "string" || typeof e.type !== "string") {
    throw new WebhookVerificationError("invalid_payload", "webhook body is not an event object");
  }
  return event as WebhookEventPayload;
}

/**
 * Checks a delivery's signature and age and returns the parsed event, typed by its `type`
 * (`if (event.type === "message.delivered") event.data.status…`), or throws
 * WebhookVerificationError with its `reason`. The signature is checked first, so a
 * `timestamp_too_old` is an authentic but stale (possibly replayed) delivery.
 */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookEventPayload {
  const { payload, headers, secret, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS } = options;
  const header = readHeader(headers, SIGNATURE_HEADER);
  if (header === undefined || header.trim() === "") throw new WebhookVerificationError("missing_signature", "no Svc-Signature header");
  const { timestamp, signatures } = parseSignatureHeader(header, readHeader(headers, TIMESTAMP_HEADER));

  if (!anySignatureMatches(hmacHex(secret, timestamp, payload), signatures)) {
    throw new WebhookVerificationError("signature_mismatch", "no v1 signature matches the payload and secret");
  }

  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (now - timestamp > toleranceSeconds) {
    throw new WebhookVerificationError("timestamp_too_old", `signed ${now - timestamp} s ago (tolerance ${toleranceSeconds} s)`);
  }
  if (timestamp - now > toleranceSeconds) {
    throw new WebhookVerificationError("timestamp_in_future", `signed ${timestamp - now} s ahead (tolerance ${toleranceSeconds} s)`);
  }
  return parseEvent(payload);
}
