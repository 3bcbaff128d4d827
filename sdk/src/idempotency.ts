// Which calls carry an Idempotency-Key. The contract is the source of truth: a route that declares
// the `idempotency-key` header (today `messages.send`, POST /v1/messages/text) always gets one, so
// that a retry, by the SDK or by the caller's own loop, can never become a second send.
import type { AppRoute } from "@ts-rest/core";
import { contract, routesOf } from "../../contract/index.js";

export const IDEMPOTENCY_HEADER = "idempotency-key";

/**
 * A fresh key: a random UUID (122 random bits), well inside the server's 1-255 printable ASCII.
 * A browser offers randomUUID only in a secure context (https, localhost); a dashboard opened over
 * plain http on another address gets the same form from getRandomValues, which it always offers.
 */
export function newIdempotencyKey(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function declaresIdempotencyKey(route: AppRoute): boolean {
  const headers = (route as { headers?: unknown }).headers as { shape?: Record<string, unknown> } | undefined;
  return typeof headers?.shape === "object" && headers.shape !== null && IDEMPOTENCY_HEADER in headers.shape;
}

const idempotentRoutes = new Set([
  `${contract.messages.send.method} ${contract.messages.send.path}`,
  ...routesOf(contract)
    .filter(({ route }) => declaresIdempotencyKey(route))
    .map(({ route }) => `${route.method} ${route.path}`),
]);

/** Whether calls to `route` must carry an Idempotency-Key. */
export function requiresIdempotencyKey(route: { method: string; path: string }): boolean {
  return idempotentRoutes.has(`${route.method} ${route.path}`);
}

/**
 * Headers (lowercase names, as ts-rest hands them to the fetcher) with an Idempotency-Key added
 * when the route requires one and the caller did not give one.
 */
export function withIdempotencyKey(route: { method: string; path: string }, headers: Record<string, string>): Record<string, string> {
  if (!requiresIdempotencyKey(route)) return headers;
  const given = Object.keys(headers).find((name) => name.toLowerCase() === IDEMPOTENCY_HEADER);
  if (given !== undefined && headers[given] !== "") return headers;
  const rest = Object.fromEntries(Object.entries(headers).filter(([name]) => name !== given));
  return { ...rest, [IDEMPOTENCY_HEADER]: newIdempotencyKey() };
}
