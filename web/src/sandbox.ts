// The sandbox's control API (docs/engines.md, "The sandbox engine"): the simulated network's phone,
// mounted by the gateway outside production only, without authentication, beside the API. It is
// not part of the API's contract, hence plain fetch here rather than @svc/sdk.
//
// The page offers it only for a connection whose `transport` is `sandbox` once its pairing QR has
// been issued: the sandbox engine and its control API are mounted together (server/gateway.ts,
// server/app.ts, both on `config.sandboxEnabled`), so an issued sandbox QR proves the control API
// is there; in production the pair itself answers 503 and no QR, hence no button, ever shows.
import { SvcApiError } from "./api";

export const SANDBOX_TRANSPORT = "sandbox";

/** The phone scans the pairing payload: the connection becomes connected as `phone`. */
export function simulateScan(payload: string, phone: string): Promise<void> {
  return control("/sandbox/v1/scan", { payload, phone });
}

/** The phone `phone` types the pairing code: connected when the code was asked for that number. */
export function simulateEnterCode(code: string, phone: string): Promise<void> {
  return control("/sandbox/v1/enter-code", { code, phone });
}

async function control(path: string, request: Record<string, string>): Promise<void> {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  if (res.ok) return;
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page): SvcApiError keeps it as the raw body.
  }
  throw new SvcApiError({ status: res.status, body, headers: res.headers });
}

/** A number for the simulated phone: +1555 and seven random digits (the range the sandbox's examples use). */
export function samplePhone(): string {
  const digits = crypto.getRandomValues(new Uint32Array(1))[0]! % 10_000_000;
  return `+1555${String(digits).padStart(7, "0")}`;
}
