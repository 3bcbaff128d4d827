// The checked authorization request, carried from /v1/oauth/authorize to the dashboard's consent
// page (and through its sign-in) as a signed, expiring token rather than a row: nothing is stored
// until a member approves. The page hands it back to the consent API, which opens it again.
import { ApiError } from "../http/errors.js";
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

  constructor(secretKey: Buffer) {
    this.key = deriveKey(secretKey, "oauth-authorization-request");
  }

  seal(request: Omit<AuthorizationRequest, "expiresAt">, now = Date.now()): string {
    const body = Buffer.from(JSON.stringify({ ...request, expiresAt: now + REQUEST_TTL_MS })).toString("base64url");
    return `${body}.${hmac(this.key, body).toString("base64url")}`;
  }

  /** The request, or why there is none: altered (or not one of ours) or expired. */
  open(sealed: string, now = Date.now()): AuthorizationRequest | "altered" | "expired" {
    const [body, mac, extra] = sealed.split(".");
    if (!body || !mac || extra !== undefined) return "altered";
    if (!safeEqual(Buffer.from(mac, "base64url"), hmac(this.key, body))) return "altered";
    try {
      const request = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as AuthorizationRequest;
      return request.expiresAt > now ? request : "expired";
    } catch {
      return "altered";
    }
  }

  /** The request, or a 400 problem naming `path` that says to start again. */
  openOrRefuse(sealed: string, path: string, now = Date.now()): AuthorizationRequest {
    const opened = this.open(sealed, now);
    if (typeof opened !== "string") return opened;
    const why = opened === "expired" ? "has expired (a member has ten minutes to decide)" : "is not one this server issued, or was altered";
    throw ApiError.validation([{ path, message: `the authorization request ${why}; start again from your application` }]);
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
