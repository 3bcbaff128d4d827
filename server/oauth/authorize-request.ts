// The checked authorization request, carried from /v1/oauth/authorize to the consent page (and
// through sign-in) as a signed, expiring token rather than a row: nothing is stored until a member
// approves. The CSRF token of the consent form is bound to the session and to this request.
import { deriveKey, hmac, safeEqual } from "../secrets.js";

/** How long a member has to sign in and decide. */
export const REQUEST_TTL_MS = 10 * 60_000;

export interface AuthorizationRequest {
  clientId: string;
  clientName: string | null;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  state: string | null;
  resource: string;
  expiresAt: number;
}

export class RequestSigner {
  private readonly key: Buffer;
  private readonly csrfKey: Buffer;

  constructor(secretKey: Buffer) {
    this.key = deriveKey(secretKey, "oauth-authorization-request");
    this.csrfKey = deriveKey(secretKey, "oauth-consent-csrf");
  }

  seal(request: Omit<AuthorizationRequest, "expiresAt">, now = Date.now()): string {
    const body = Buffer.from(JSON.stringify({ ...request, expiresAt: now + REQUEST_TTL_MS })).toString("base64url");
    return `${body}.${hmac(this.key, body).toString("base64url")}`;
  }

  /** The request, or null when it was altered or has expired. */
  open(sealed: string, now = Date.now()): AuthorizationRequest | null {
    const [body, mac, extra] = sealed.split(".");
    if (!body || !mac || extra !== undefined) return null;
    if (!safeEqual(Buffer.from(mac, "base64url"), hmac(this.key, body))) return null;
    try {
      const request = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as AuthorizationRequest;
      return request.expiresAt > now ? request : null;
    } catch {
      return null;
    }
  }

  csrf(sessionId: string, sealed: string): string {
    return hmac(this.csrfKey, `${sessionId}.${sealed}`).toString("base64url");
  }

  csrfMatches(sessionId: string, sealed: string, given: string): boolean {
    return safeEqual(Buffer.from(given, "base64url"), hmac(this.csrfKey, `${sessionId}.${sealed}`));
  }
}

/** The redirect that ends an authorization: `code` or `error`, always `state` and `iss` (RFC 9207). */
export function clientRedirect(request: Pick<AuthorizationRequest, "redirectUri" | "state">, issuer: string, params: Record<string, string>): string {
  const url = new URL(request.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  if (request.state !== null) url.searchParams.set("state", request.state);
  url.searchParams.set("iss", issuer);
  return url.toString();
}
