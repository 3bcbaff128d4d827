// The authorization server's refusals (issue 13, the negative table), its pages' protections, its
// limits at their edges, discovery documents and the member's list and revoke, over real HTTP.
import { expect } from "chai";
import { pruneOAuth } from "../server/oauth/clients.js";
import { REGISTRATIONS_PER_HOUR } from "../server/oauth/handlers.js";
import { testEnv } from "./setup.js";
import { clientAddress, http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import {
  authorizationUrl,
  consent,
  decide,
  obtainTokens,
  openConsent,
  pkce,
  REDIRECT_URI,
  registerClient,
  tokenRequest,
  toolResource,
  webUrl,
} from "./support/oauth.js";

const MCP = { accept: "application/json, text/event-stream" };
const LIST = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };

async function toolsStatus(access: string): Promise<number> {
  return (await http("POST", "/v1/mcp", { headers: { ...MCP, authorization: `Bearer ${access}` }, body: LIST })).status;
}

async function newClientId(): Promise<string> {
  return ((await (await registerClient()).json()) as { client_id: string }).client_id;
}

function db() {
  return testEnv().gateway.ctx.db;
}

describe("OAuth for the tool endpoint: refusals", () => {
  let ws: TestWorkspace;

  before(async () => {
    ws = await newWorkspace();
  });

  describe("registration", () => {
    it("accepts https and loopback http redirects, refuses http elsewhere, fragments and secrets", async () => {
      for (const uri of ["https://app.example/cb", "http://127.0.0.1:9/cb", "http://localhost/cb", "http://[::1]:8080/cb"]) {
        expect((await registerClient([uri])).status, uri).to.equal(201);
      }
      for (const uri of ["http://app.example/cb", "http://10.0.0.1/cb", "https://app.example/cb#x", "javascript:alert(1)"]) {
        const res = await registerClient([uri]);
        expect(res.status, uri).to.equal(400);
        expect(((await res.json()) as { error: string }).error, uri).to.equal("invalid_redirect_uri");
      }
      const secret = await http("POST", "/v1/oauth/register", { body: { redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "client_secret_basic" }, headers: { "x-forwarded-for": clientAddress() } });
      expect(secret.status).to.equal(400);
      expect(secret.json).to.include({ error: "invalid_client_metadata" });
      expect(secret.json).to.not.have.property("client_secret");
    });

    it("takes a client_name of 200 characters and refuses 201", async () => {
      const ok = await http("POST", "/v1/oauth/register", { body: { redirect_uris: [REDIRECT_URI], client_name: "n".repeat(200) }, headers: { "x-forwarded-for": clientAddress() } });
      expect(ok.status).to.equal(201);
      expect(ok.json).to.include({ token_endpoint_auth_method: "none" });
      const long = await http("POST", "/v1/oauth/register", { body: { redirect_uris: [REDIRECT_URI], client_name: "n".repeat(201) }, headers: { "x-forwarded-for": clientAddress() } });
      expect(long.status).to.equal(400);
      expect(long.json).to.include({ error: "invalid_client_metadata" });
    });

    it(`allows ${REGISTRATIONS_PER_HOUR} registrations an hour from one address, then 429`, async () => {
      const ip = clientAddress();
      for (let i = 0; i < REGISTRATIONS_PER_HOUR; i++) expect((await registerClient([REDIRECT_URI], ip)).status).to.equal(201);
      const over = await registerClient([REDIRECT_URI], ip);
      expect(over.status).to.equal(429);
      expect(over.headers.get("retry-after")).to.match(/^\d+$/);
    });

    it("prunes registrations nobody approved for a day, and keeps approved ones", async () => {
      const unused = await newClientId();
      const approved = await obtainTokens(ws.owner.cookie);
      await db().query(`UPDATE oauth_clients SET created_at = now() - interval '25 hours' WHERE id = ANY($1)`, [[unused, approved.clientId]]);
      const fresh = await newClientId();
      await pruneOAuth(db());
      const left = (await db().query(`SELECT id FROM oauth_clients WHERE id = ANY($1)`, [[unused, approved.clientId, fresh]])) as { id: string }[];
      expect(left.map((r) => r.id).sort()).to.deep.equal([approved.clientId, fresh].sort());
    });
  });

  describe("authorize", () => {
    it("answers 400 without redirecting for an unknown client or a redirect URI that does not match exactly", async () => {
      const clientId = await newClientId();
      for (const url of [
        authorizationUrl("ocl_unknown", pkce()),
        authorizationUrl(clientId, pkce(), { redirect_uri: `${REDIRECT_URI}/` }),
        authorizationUrl(clientId, pkce(), { redirect_uri: "http://127.0.0.1:53682/callback?x=1" }),
      ]) {
        const res = await fetch(url, { redirect: "manual" });
        expect(res.status, url).to.equal(400);
        expect(res.headers.get("location")).to.equal(null);
      }
    });

    it("redirects other refusals to the client with error, state and iss", async () => {
      const clientId = await newClientId();
      const cases: [Record<string, string>, string][] = [
        [{ code_challenge_method: "plain" }, "invalid_request"],
        [{ code_challenge: "short" }, "invalid_request"],
        [{ resource: "https://elsewhere.example/v1/mcp" }, "invalid_target"],
        [{ scope: "mcp:read messages:write" }, "invalid_scope"],
        [{ response_type: "token" }, "unsupported_response_type"],
      ];
      for (const [params, error] of cases) {
        const res = await fetch(authorizationUrl(clientId, pkce(), params), { redirect: "manual" });
        expect(res.status, error).to.equal(302);
        const location = new URL(res.headers.get("location")!);
        expect(location.origin + location.pathname).to.equal(REDIRECT_URI);
        expect(location.searchParams.get("error"), JSON.stringify(params)).to.equal(error);
        expect(location.searchParams.get("state")).to.equal("st-123");
        expect(location.searchParams.get("iss")).to.equal(webUrl());
      }
    });

    it("sends a member who is not signed in through the sign-in page and back to consent", async () => {
      const member = await ws.addMember("developer");
      const clientId = await newClientId();
      const authorize = await fetch(authorizationUrl(clientId, pkce()), { redirect: "manual" });
      const consentUrl = new URL(authorize.headers.get("location")!);
      const anonymous = await fetch(consentUrl, { redirect: "manual" });
      expect(anonymous.status).to.equal(303);
      const signInUrl = new URL(anonymous.headers.get("location")!, consentUrl);
      expect(signInUrl.pathname).to.equal("/oauth/sign-in");
      const form = await fetch(signInUrl);
      expect(form.status).to.equal(200);
      expect(form.headers.get("x-frame-options")).to.equal("DENY");
      const next = signInUrl.searchParams.get("next")!;
      const ip = clientAddress();
      const { mailbox } = testEnv();
      const since = mailbox.mails.length;
      const post = (path: string, fields: Record<string, string>) =>
        fetch(`${webUrl()}${path}`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": ip }, body: new URLSearchParams(fields).toString() });
      expect((await post("/oauth/sign-in", { next, email: member.email })).status).to.equal(200);
      const [, code] = await mailbox.waitFor(member.email, /sign-in code is (\d{6})/, since);
      const wrong = await post("/oauth/sign-in/verify", { next, email: member.email, code: code === "000000" ? "111111" : "000000" });
      expect(wrong.status).to.equal(401);
      const verified = await post("/oauth/sign-in/verify", { next, email: member.email, code: code! });
      expect(verified.status).to.equal(303);
      expect(verified.headers.get("location")).to.equal(next);
      const cookie = verified.headers.getSetCookie().find((c) => c.startsWith("svc_session="))!.split(";")[0]!;
      const page = await fetch(new URL(next, webUrl()), { headers: { cookie } });
      expect(page.status).to.equal(200);
      expect(await page.text()).to.contain("Test assistant").and.contain("127.0.0.1:53682").and.contain("mcp:write");
    });

    it("shows a consent page that cannot be framed and refuses a forged or cross-site decision", async () => {
      const page = await openConsent(authorizationUrl(await newClientId(), pkce()), ws.owner.cookie);
      expect(page.status).to.equal(200);
      expect(page.headers.get("x-frame-options")).to.equal("DENY");
      expect(page.headers.get("content-security-policy")).to.contain("frame-ancestors 'none'");
      expect((await decide({ ...page, csrf: "forged" }, ws.owner.cookie, "approve")).status).to.equal(403);
      const other = await newWorkspace();
      expect((await decide(page, other.owner.cookie, "approve")).status).to.equal(403);
      expect((await decide(page, ws.owner.cookie, "approve", { origin: "https://evil.example", "sec-fetch-site": "cross-site" })).status).to.equal(403);
      const tampered = { ...page, request: page.request.replace(/^./, (c) => (c === "e" ? "f" : "e")) };
      expect((await decide(tampered, ws.owner.cookie, "approve")).status).to.equal(400);
      const denied = await decide(page, ws.owner.cookie, "deny");
      expect(denied.status).to.equal(303);
      expect(new URL(denied.headers.get("location")!).searchParams.get("error")).to.equal("access_denied");
    });

    it("lets a viewer see but not approve the request", async () => {
      const viewer = await ws.addMember("viewer");
      const page = await openConsent(authorizationUrl(await newClientId(), pkce()), viewer.cookie);
      expect(page.status).to.equal(403);
      expect(page.html).to.not.contain('value="approve"');
      const res = await decide(page, viewer.cookie, "approve");
      expect(res.status).to.equal(403);
      expect(res.headers.get("location")).to.equal(null);
    });
  });

  describe("token", () => {
    async function code(params: Record<string, string> = {}) {
      const clientId = await newClientId();
      const p = pkce();
      const query = await consent(authorizationUrl(clientId, p, params), ws.owner.cookie);
      return { clientId, p, code: query.get("code")! };
    }

    const exchange = (c: { clientId: string; p: { verifier: string }; code: string }, extra: Record<string, string> = {}) =>
      tokenRequest({ grant_type: "authorization_code", code: c.code, code_verifier: c.p.verifier, redirect_uri: REDIRECT_URI, client_id: c.clientId, ...extra });

    it("refuses a wrong verifier, and the code is spent", async () => {
      const c = await code();
      const wrong = await exchange(c, { code_verifier: pkce().verifier });
      expect(wrong).to.deep.include({ status: 400 });
      expect(wrong.json.error).to.equal("invalid_grant");
      expect((await exchange(c)).json.error).to.equal("invalid_grant");
    });

    it("refuses a reused code and revokes what its first use issued", async () => {
      const c = await code();
      const first = await exchange(c);
      expect(first.status).to.equal(200);
      expect(await toolsStatus(first.json.access_token!)).to.equal(200);
      const second = await exchange(c);
      expect(second.json.error).to.equal("invalid_grant");
      expect(await toolsStatus(first.json.access_token!)).to.equal(401);
      expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: first.json.refresh_token! })).json.error).to.equal("invalid_grant");
    });

    it("refuses a redirect URI, client or resource that differs from the authorization", async () => {
      expect((await exchange(await code(), { redirect_uri: "http://127.0.0.1:53682/other" })).json.error).to.equal("invalid_grant");
      expect((await exchange(await code(), { client_id: await newClientId() })).json.error).to.equal("invalid_grant");
      expect((await exchange(await code(), { resource: "https://elsewhere.example/v1/mcp" })).json.error).to.equal("invalid_target");
    });

    it("refuses an expired code (ten minutes)", async () => {
      const c = await code();
      await db().query(`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = $1)`, [c.clientId]);
      expect((await exchange(c)).json.error).to.equal("invalid_grant");
    });

    it("rotates refresh tokens; a replayed old one revokes the whole grant", async () => {
      const t = await obtainTokens(ws.owner.cookie);
      const rotated = await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh, client_id: t.clientId });
      expect(rotated.status).to.equal(200);
      expect(rotated.json.refresh_token).to.not.equal(t.refresh);
      expect(await toolsStatus(rotated.json.access_token!)).to.equal(200);
      const replay = await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh, client_id: t.clientId });
      expect(replay.json.error).to.equal("invalid_grant");
      expect(await toolsStatus(rotated.json.access_token!)).to.equal(401);
      expect(await toolsStatus(t.access)).to.equal(401);
      expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: rotated.json.refresh_token! })).json.error).to.equal("invalid_grant");
    });

    it("answers unsupported_grant_type and invalid_request in the OAuth shape, with no-store", async () => {
      const res = await fetch(`${testEnv().baseUrl}/v1/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=password" });
      expect(res.status).to.equal(400);
      expect(res.headers.get("cache-control")).to.equal("no-store");
      expect(await res.json()).to.include({ error: "unsupported_grant_type" });
      expect((await tokenRequest({ grant_type: "authorization_code" })).json.error).to.equal("invalid_request");
    });
  });

  describe("access tokens", () => {
    it("are refused in a query string and on every REST route", async () => {
      const t = await obtainTokens(ws.owner.cookie);
      const query = await http("POST", `/v1/mcp?access_token=${t.access}`, { headers: MCP, body: LIST });
      expect(query.status).to.equal(401);
      for (const path of ["/v1/whoami", "/v1/messages", "/v1/connections", "/v1/mcp/tools"]) {
        const res = await http("GET", path, { headers: { authorization: `Bearer ${t.access}` } });
        expect(res.status, path).to.equal(401);
      }
      expect(await toolsStatus(t.access)).to.equal(200);
    });

    it("stop working when the member is removed, and are capped when the role drops", async () => {
      const dev = await ws.addMember("developer");
      const t = await obtainTokens(dev.cookie);
      expect(await toolsStatus(t.access)).to.equal(200);
      const members = (await http("GET", "/v1/members", { headers: { cookie: ws.owner.cookie } })).json.members as { id: string; email: string }[];
      const id = members.find((m) => m.email === dev.email)!.id;
      await testEnv().gateway.ctx.services.workspaces.setPlan(ws.id, "enterprise");
      expect((await http("PATCH", `/v1/members/${id}`, { headers: { cookie: ws.owner.cookie }, body: { role: "viewer" } })).status).to.equal(200);
      expect(await toolsStatus(t.access)).to.equal(403);
      expect((await http("DELETE", `/v1/members/${id}`, { headers: { cookie: ws.owner.cookie } })).status).to.equal(204);
      await testEnv().gateway.ctx.services.workspaces.setPlan(ws.id, "pro");
      expect(await toolsStatus(t.access)).to.equal(401);
      expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh })).json.error).to.equal("invalid_grant");
    });

    it("are stored only as digests", async () => {
      const t = await obtainTokens(ws.owner.cookie);
      const rows = (await db().query(`SELECT encode(digest, 'hex') AS d FROM oauth_tokens`)) as { d: string }[];
      expect(JSON.stringify(rows)).to.not.contain(t.access).and.not.contain(t.refresh);
    });
  });

  describe("the member's authorizations", () => {
    it("lists only the member's own, and revoking one ends its tokens", async () => {
      const t = await obtainTokens(ws.owner.cookie);
      const other = await newWorkspace();
      const list = await http("GET", "/v1/oauth/authorizations", { headers: { cookie: ws.owner.cookie } });
      const mine = (list.json.data as { id: string; client_id: string; scopes: string[] }[]).find((a) => a.client_id === t.clientId)!;
      expect(mine.scopes).to.deep.equal(["mcp:read", "mcp:write"]);
      expect(JSON.stringify(list.json)).to.not.contain("svc_mcp_");
      const member = await ws.addMember("admin");
      expect((await http("DELETE", `/v1/oauth/authorizations/${mine.id}`, { headers: { cookie: member.cookie } })).status).to.equal(404);
      const theirs = await http("GET", "/v1/oauth/authorizations", { headers: { cookie: other.owner.cookie } });
      expect(theirs.status).to.equal(200);
      expect(theirs.json.data).to.deep.equal([]);
      expect((await http("GET", "/v1/oauth/authorizations", { headers: { authorization: `Bearer ${t.access}` } })).status).to.equal(401);
      expect((await http("DELETE", `/v1/oauth/authorizations/${mine.id}`, { headers: { cookie: ws.owner.cookie } })).status).to.equal(204);
      expect(await toolsStatus(t.access)).to.equal(401);
      expect((await http("DELETE", `/v1/oauth/authorizations/${mine.id}`, { headers: { cookie: ws.owner.cookie } })).status).to.equal(404);
    });
  });

  describe("discovery", () => {
    it("serves RFC 8414 and RFC 9728 metadata in both forms, and the tool resource in the API catalog", async () => {
      const as = (await (await fetch(`${webUrl()}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      expect(as).to.include({ issuer: webUrl(), authorization_response_iss_parameter_supported: true });
      expect(as.code_challenge_methods_supported).to.deep.equal(["S256"]);
      expect(as.token_endpoint_auth_methods_supported).to.deep.equal(["none"]);
      expect(as.grant_types_supported).to.deep.equal(["authorization_code", "refresh_token"]);
      expect(as.scopes_supported).to.deep.equal(["mcp:read", "mcp:write"]);
      for (const path of ["/.well-known/oauth-protected-resource/v1/mcp", "/.well-known/oauth-protected-resource"]) {
        const res = await fetch(`${webUrl()}${path}`);
        expect(res.headers.get("access-control-allow-origin")).to.equal("*");
        const prm = (await res.json()) as Record<string, unknown>;
        expect(prm).to.include({ resource: toolResource() });
        expect(prm.authorization_servers).to.deep.equal([webUrl()]);
      }
      const catalog = (await (await fetch(`${webUrl()}/.well-known/api-catalog`)).json()) as { linkset: { anchor: string }[] };
      expect(catalog.linkset.map((l) => l.anchor)).to.include(toolResource());
    });
  });
});
