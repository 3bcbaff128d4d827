// The browser's part of the authorization flow, done over HTTP the way a browser does it: follow
// authorize to the consent page, read its form, post the member's decision.
import { createHash, randomBytes } from "node:crypto";
import { testEnv } from "../setup.js";

export function webUrl(): string {
  return testEnv().gateway.ctx.config.webUrl;
}

export function toolResource(): string {
  return `${webUrl()}/v1/mcp`;
}

export interface ConsentPage {
  status: number;
  html: string;
  request: string;
  csrf: string;
  headers: Headers;
}

/** Follows an authorization URL to the consent page as the member with `cookie`. */
export async function openConsent(authorizationUrl: string, cookie: string): Promise<ConsentPage> {
  const authorize = await fetch(authorizationUrl, { redirect: "manual" });
  if (authorize.status !== 302) throw new Error(`authorize answered ${authorize.status}: ${await authorize.text()}`);
  const consentUrl = new URL(authorize.headers.get("location")!, authorizationUrl);
  const res = await fetch(consentUrl, { headers: { cookie }, redirect: "manual" });
  const html = await res.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  return { status: res.status, html, request: field("request"), csrf: field("csrf"), headers: res.headers };
}

/** Posts the consent form; returns where it redirects (the client's redirect URI with code or error). */
export async function decide(page: Pick<ConsentPage, "request" | "csrf">, cookie: string, decision: "approve" | "deny", extraHeaders: Record<string, string> = {}): Promise<Response> {
  return fetch(`${webUrl()}/oauth/consent`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...extraHeaders },
    body: new URLSearchParams({ request: page.request, csrf: page.csrf, decision }).toString(),
  });
}

/** Approves as the member and answers the redirect's query parameters. */
export async function consent(authorizationUrl: string, cookie: string): Promise<URLSearchParams> {
  const page = await openConsent(authorizationUrl, cookie);
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}`);
  const res = await decide(page, cookie, "approve");
  if (res.status !== 303) throw new Error(`consent answered ${res.status}: ${await res.text()}`);
  return new URL(res.headers.get("location")!).searchParams;
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export const REDIRECT_URI = "http://127.0.0.1:53682/callback";

export async function registerClient(redirectUris = [REDIRECT_URI], ip = `10.9.${randomBytes(1)[0]}.${randomBytes(1)[0]}`): Promise<Response> {
  return fetch(`${testEnv().baseUrl}/v1/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": ip },
    body: JSON.stringify({ client_name: "Test assistant", redirect_uris: redirectUris }),
  });
}

export function authorizationUrl(clientId: string, p: Pkce, params: Record<string, string> = {}): string {
  const u = new URL(`${testEnv().baseUrl}/v1/oauth/authorize`);
  const all = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: p.challenge,
    code_challenge_method: "S256",
    scope: "mcp:read mcp:write",
    state: "st-123",
    resource: toolResource(),
    ...params,
  };
  for (const [k, v] of Object.entries(all)) u.searchParams.set(k, v);
  return u.toString();
}

export async function tokenRequest(params: Record<string, string>): Promise<{ status: number; json: Record<string, string> }> {
  const res = await fetch(`${testEnv().baseUrl}/v1/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, json: (await res.json()) as Record<string, string> };
}

/** Registration, consent by `cookie`'s member and the code exchange, in raw HTTP. */
export async function obtainTokens(cookie: string): Promise<{ clientId: string; access: string; refresh: string }> {
  const reg = (await (await registerClient()).json()) as { client_id: string };
  const p = pkce();
  const query = await consent(authorizationUrl(reg.client_id, p), cookie);
  const t = await tokenRequest({
    grant_type: "authorization_code",
    code: query.get("code")!,
    code_verifier: p.verifier,
    redirect_uri: REDIRECT_URI,
    client_id: reg.client_id,
    resource: toolResource(),
  });
  if (t.status !== 200) throw new Error(`token answered ${t.status}: ${JSON.stringify(t.json)}`);
  return { clientId: reg.client_id, access: t.json.access_token!, refresh: t.json.refresh_token! };
}
