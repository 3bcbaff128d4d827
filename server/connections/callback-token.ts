// A connection's callback token authenticates its engine's reports. It is never stored: the
// database keeps a random nonce and the token's SHA-256 digest (for lookup), and the gateway
// re-derives the token as HMAC(SECRET_KEY, id.nonce) when it hands a callback URL to an engine.
import { randomToken, deriveKey, hmac, sha256 } from "../secrets.js";

export function newCallbackNonce(): string {
  return randomToken(16);
}

export function callbackToken(secretKey: Buffer, connectionId: string, nonce: string): string {
  return hmac(deriveKey(secretKey, "callback-token"), `${connectionId}.${nonce}`).toString("base64url");
}

export function callbackTokenDigest(token: string): Buffer {
  return sha256(token);
}

export function callbackUrl(baseUrl: string, engineName: string, token: string): string {
  return `${baseUrl}/v1/provider/${encodeURIComponent(engineName)}/${token}`;
}
