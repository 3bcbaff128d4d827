// Driving the sandbox engine from tests: its control API over HTTP, and a connection linked the
// way a user links one (create, pair, redeem the QR, a phone scans it).
import { randomBytes } from "node:crypto";
import type { Connection, Pairing, PairingCode, PairingPayload } from "../../contract/index.js";
import { expectOk } from "../../sdk/src/index.js";
import { testEnv } from "../setup.js";
import type { Client } from "./actors.js";
import { waitFor } from "./wait.js";

/** A phone number no other test uses (sandbox state is shared by the whole run). */
export function uniquePhone(prefix = "+1557"): string {
  return `${prefix}${String(randomBytes(4).readUInt32BE(0) % 10_000_000).padStart(7, "0")}`;
}

/** The QR of a redeemed grant; throws when the grant showed a code instead. */
export function qrOf(pairing: Pairing): PairingPayload {
  if (pairing.method !== "qr") throw new Error(`expected a QR grant, got ${JSON.stringify(pairing)}`);
  return pairing;
}

/** The code of a redeemed grant; throws when the grant showed a QR instead. */
export function codeOf(pairing: Pairing): PairingCode {
  if (pairing.method !== "code") throw new Error(`expected a code grant, got ${pairing.method}`);
  return pairing;
}

/** A call to the sandbox control API; answers the status and the parsed JSON body. */
export async function sandbox(
  method: "GET" | "POST" | "PATCH",
  path: string,
  body?: unknown,
  baseUrl = testEnv().baseUrl,
): Promise<{ status: number; json: Record<string, unknown> & { code?: string; data?: Record<string, unknown>[] } }> {
  const res = await fetch(`${baseUrl}/sandbox/v1${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : {} };
}

/** Scans a pairing payload as `phone`; throws unless the sandbox accepted it. */
export async function scan(payload: string, phone: string, baseUrl?: string): Promise<void> {
  const res = await sandbox("POST", "/scan", { payload, phone }, baseUrl);
  if (res.status !== 200) throw new Error(`sandbox scan answered ${res.status}: ${JSON.stringify(res.json)}`);
}

/** Waits until the connection's state satisfies `predicate` (engine reports arrive asynchronously). */
export async function waitForConnection(client: Client, slug: string, predicate: (c: Connection) => boolean, timeoutMs = 10_000): Promise<Connection> {
  return waitFor(() => expectOk(client.connections.get({ params: { connection: slug } })), predicate, timeoutMs);
}

/**
 * A connected connection `slug` linked as `phone`: created when it does not exist, paired, its QR
 * redeemed and scanned through the control API (of `baseUrl`, default the test gateway); returns
 * once the gateway shows it connected. `client` needs connections:read and connections:write.
 */
export async function pairConnection(client: Client, slug: string, phone: string, options: { baseUrl?: string; timeoutMs?: number } = {}): Promise<Connection> {
  const existing = await client.connections.get({ params: { connection: slug } });
  if (existing.status === 200 && existing.body.state === "connected" && existing.body.phone === phone) return existing.body;
  if (existing.status === 404) await expectOk(client.connections.create({ body: { slug } }));
  const grant = await expectOk(client.connections.pair({ params: { connection: slug } }));
  const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: slug, grantId: grant.grant_id } })));
  await scan(qr.payload, phone, options.baseUrl);
  return waitForConnection(client, slug, (c) => c.state === "connected" && c.phone === phone, options.timeoutMs);
}
