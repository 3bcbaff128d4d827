// The dashboard's part of the authorization flow, done over HTTP the way its consent page does it:
// follow authorize to the page's address, read the pending request from the consent API, post the
// member's decision as JSON and take the address it answers.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CONSENT_PAGE_PATH } from "../../contract/oauth.js";
import { testEnv } from "../setup.js";
import { http } from "./actors.js";

export function webUrl(): string {
  return testEnv().gateway.ctx.config.webUrl;
}

export function toolResource(): string {
  return `${webUrl()}/v1/mcp`;
}

/** Follows an authorization URL to the dashboard's consent page; answers the sealed request it carries. */
export async function sealedRequest(authorizationUrl: string): Promise<string> {
  const authorize = await fetch(authorizationUrl, { redirect: "manual" });
  if (authorize.status !== 302) throw new Error(`authorize answered ${authorize.status}: ${await authorize.text()}`);
  const page = new URL(authorize.headers.get("location")!, authorizationUrl);
  if (page.origin + page.pathname !== webUrl() + CONSENT_PAGE_PATH) throw new Error(`authorize redirected to ${page.href}`);
  return page.searchParams.get("request") ?? "";
}

export interface ConsentPage {
  status: number;
  /** The sealed authorization request, as the page's address carries it. */
  request: string;
  json: Record<string, unknown> & { code?: string };
}

/** What the consent page shows the member with `cookie`: GET /v1/oauth/consent. */
export async function readConsent(request: string, cookie: string): Promise<ConsentPage> {
  const res = await http("GET", `/v1/oauth/consent?request=${encodeURIComponent(request)}`, { headers: { cookie } });
  return { status: res.status, request, json: res.json };
}

/** Follows an authorization URL to the consent page and reads it as the member with `cookie`. */
export async function openConsent(authorizationUrl: string, cookie: string): Promise<ConsentPage> {
  return readConsent(await sealedRequest(authorizationUrl), cookie);
}

/** Posts the member's decision as the page does; `redirect_to` is where the page then navigates. */
export async function decide(page: Pick<ConsentPage, "request">, cookie: string, decision: "approve" | "deny", extraHeaders: Record<string, string> = {}) {
  return http("POST", "/v1/oauth/consent", { headers: { cookie, ...extraHeaders }, body: { request: page.request, decision } });
}

/** Approves as the member and answers the redirect's query parameters. */
export async function consent(authorizationUrl: string, cookie: string): Promise<URLSearchParams> {
  const page = await openConsent(authorizationUrl, cookie);
  if (page.status !== 200) throw new Error(`consent request answered ${page.status}: ${JSON.stringify(page.json)}`);
  const res = await decide(page, cookie, "approve");
  if (res.status !== 200) throw new Error(`consent answered ${res.status}: ${res.text}`);
  return new URL(res.json.redirect_to as string).searchParams;
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
  return tokensFor(reg.client_id, cookie);
}

/**
 * Client ID Metadata Documents served from loopback, which the test gateway's
 * OUTBOUND_ALLOW_PRIVATE (127.0.0.0/8) opens, http included.
 */
export class ClientDocuments {
  readonly documents = new Map<string, string>();
  private constructor(
    private readonly server: Server,
    readonly base: string,
  ) {}

  static async start(): Promise<ClientDocuments> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const docs = new ClientDocuments(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (req, res) => {
      const doc = docs.documents.get(req.url ?? "");
      if (doc === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" }).end(doc);
    });
    return docs;
  }

  /** Serves `doc` at `path` naming its own URL as client_id (unless `doc` is raw text): the URL. */
  serve(path: string, doc: Record<string, unknown> | string): string {
    const url = `${this.base}${path}`;
    this.documents.set(path, typeof doc === "string" ? doc : JSON.stringify({ client_id: url, ...doc }));
    return url;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Consent by `cookie`'s member and the code exchange for `clientId`, in raw HTTP. */
async function tokensFor(clientId: string, cookie: string): Promise<{ clientId: string; access: string; refresh: string }> {
  const p = pkce();
  const query = await consent(authorizationUrl(clientId, p), cookie);
  const t = await tokenRequest({
    grant_type: "authorization_code",
    code: query.get("code")!,
    code_verifier: p.verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    resource: toolResource(),
  });
  if (t.status !== 200) throw new Error(`token answered ${t.status}: ${JSON.stringify(t.json)}`);
  return { clientId, access: t.json.access_token!, refresh: t.json.refresh_token! };
}

/** As obtainTokens, with a Client ID Metadata Document as the client instead of a registration. */
export async function obtainTokensWithDocument(documents: ClientDocuments, cookie: string) {
  const clientId = documents.serve(`/client-${randomBytes(4).toString("hex")}.json`, { client_name: "Document assistant", redirect_uris: [REDIRECT_URI] });
  return tokensFor(clientId, cookie);
}
