// The authorization server's refusals (the negative table), its consent API's protections, its
// limits at their edges, discovery documents and the member's list and revoke, over real HTTP.
import { expect } from "chai";
import { CONSENT_PAGE_PATH } from "../contract/oauth.js";
import { REQUEST_TTL_MS, RequestSigner } from "../server/oauth/authorize-request.js";
import { pruneOAuth } from "../server/oauth/clients.js";
import { REGISTRATIONS_PER_HOUR } from "../server/oauth/service.js";
import { testEnv } from "./setup.js";
import { expectOk } from "../sdk/src/index.js";
import { clientAddress, fromDashboard, http, newWorkspace, signIn, uniqueEmail, type TestWorkspace } from "./support/actors.js";
import {
  authorizationUrl,
  consent,
  decide,
  obtainTokens,
  openConsent,
  pkce,
  readConsent,
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
      for (const uri of ["http://app.example/cb", "http://10.0.0.1/cb", "https://app.example/cb#x", "javascript:alert(1)", "https://app.example@evil.example/cb", "https://user:pw@app.example/cb", "http://user@127.0.0.1:9/cb"]) {
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

    it("names client_id or redirect_uri given twice, without redirecting", async () => {
      const clientId = await newClientId();
      for (const name of ["client_id", "redirect_uri"]) {
        const url = new URL(authorizationUrl(clientId, pkce()));
        url.searchParams.append(name, url.searchParams.get(name)!);
        const res = await fetch(url, { redirect: "manual" });
        expect(res.status, name).to.equal(400);
        expect(res.headers.get("location")).to.equal(null);
        expect(((await res.json()) as { detail: string }).detail).to.contain(`${name} given twice`);
      }
    });

    it("shows an error for a client nobody approved on a page, never redirecting to its URI (RFC 9700 4.11)", async () => {
      // Anyone may register any https address as a client's redirect URI: redirecting its errors
      // would make the endpoint an open redirect.
      const registered = await registerClient(["https://attacker.example/landing"]);
      const { client_id: clientId } = (await registered.json()) as { client_id: string };
      const cases: Record<string, string>[] = [{ response_type: "token" }, { scope: "everything" }, { code_challenge_method: "plain" }];
      for (const params of cases) {
        const res = await fetch(authorizationUrl(clientId, pkce(), { redirect_uri: "https://attacker.example/landing", ...params }), { redirect: "manual" });
        expect(res.status, JSON.stringify(params)).to.equal(400);
        expect(res.headers.get("location")).to.equal(null);
        expect(res.headers.get("content-type")).to.match(/^text\/html/);
        expect(res.headers.get("content-security-policy")).to.contain("default-src 'none'");
        const html = await res.text();
        expect(html).to.contain("No member has approved this application with attacker.example");
        expect(html).to.not.contain("https://attacker.example/landing");
      }
      const twice = new URL(authorizationUrl(clientId, pkce(), { redirect_uri: "https://attacker.example/landing" }));
      twice.searchParams.append("scope", "mcp:read");
      const page = await fetch(twice, { redirect: "manual" });
      expect(page.status).to.equal(400);
      expect(await page.text()).to.contain("scope given twice");
      // A name with markup is shown as text.
      const named = await http("POST", "/v1/oauth/register", {
        body: { client_name: "<script>alert(1)</script>", redirect_uris: [REDIRECT_URI] },
        headers: { "x-forwarded-for": clientAddress() },
      });
      const shown = await (await fetch(authorizationUrl(named.json.client_id as string, pkce(), { response_type: "token" }), { redirect: "manual" })).text();
      expect(shown).to.contain("&lt;script&gt;alert(1)&lt;/script&gt;").and.not.contain("<script>");
    });

    it("redirects other refusals to a client a member approved with that URI, with error, state and iss", async () => {
      const { clientId } = await obtainTokens(ws.owner.cookie);
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
      // Once the approval is revoked, nobody vouches for the URI any more: a page again.
      const other = await newWorkspace();
      const approval = await obtainTokens(other.owner.cookie);
      const [grant] = (await expectOk(other.owner.client.oauth.listAuthorizations())).data.filter((a) => a.client_id === approval.clientId);
      const bad = authorizationUrl(approval.clientId, pkce(), { response_type: "token" });
      expect((await fetch(bad, { redirect: "manual" })).status).to.equal(302);
      await expectOk(other.owner.client.oauth.revokeAuthorization({ params: { id: grant!.id } }));
      const after = await fetch(bad, { redirect: "manual" });
      expect(after.status).to.equal(400);
      expect(after.headers.get("location")).to.equal(null);
    });

    it("sends the member to the dashboard's consent page, which cannot be framed; its API wants a session", async () => {
      const member = await ws.addMember("developer");
      const authorize = await fetch(authorizationUrl(await newClientId(), pkce()), { redirect: "manual" });
      expect(authorize.status).to.equal(302);
      const pageUrl = new URL(authorize.headers.get("location")!);
      expect(pageUrl.origin + pageUrl.pathname).to.equal(`${webUrl()}${CONSENT_PAGE_PATH}`);
      const page = await fetch(pageUrl, { headers: { accept: "text/html" } });
      expect(page.status).to.equal(200);
      expect(page.headers.get("content-type")).to.match(/^text\/html/);
      expect(page.headers.get("x-frame-options")).to.equal("DENY");
      expect(page.headers.get("content-security-policy")).to.contain("frame-ancestors 'none'");
      expect(page.headers.get("cache-control")).to.equal("no-store");
      expect(page.headers.get("referrer-policy")).to.equal("no-referrer");
      const request = pageUrl.searchParams.get("request")!;
      expect((await readConsent(request, "")).status).to.equal(401);
      const shown = await readConsent(request, member.cookie);
      expect(shown.status).to.equal(200);
      expect(shown.json).to.deep.include({ client_name: "Test assistant", redirect_uri: REDIRECT_URI, redirect_host: "127.0.0.1:53682", role: "developer", may_approve: true });
      expect(shown.json.granted_scopes).to.deep.equal(["mcp:read", "mcp:write"]);
      const scopes = shown.json.requested_scopes as { scope: string; description: string }[];
      expect(scopes.map((x) => x.scope)).to.deep.equal(["mcp:read", "mcp:write"]);
      expect(scopes[1]!.description).to.contain("Send messages");
      // Nothing else of the request (its PKCE challenge, its state) is shown.
      expect(Object.keys(shown.json).sort()).to.deep.equal(
        ["client_id", "client_name", "expires_at", "granted_scopes", "may_approve", "redirect_host", "redirect_uri", "requested_scopes", "role"],
      );
    });

    it("refuses a cross-site, form-encoded, altered or expired decision", async () => {
      const page = await openConsent(authorizationUrl(await newClientId(), pkce()), ws.owner.cookie);
      expect(page.status).to.equal(200);
      const crossOrigin = await decide(page, ws.owner.cookie, "approve", { origin: "https://evil.example", "sec-fetch-site": "cross-site" });
      expect(crossOrigin.status).to.equal(403);
      expect(crossOrigin.json.code).to.equal("cross_site_request");
      expect((await decide(page, ws.owner.cookie, "approve", { "sec-fetch-site": "cross-site" })).status).to.equal(403);
      // A form (what another site's page can post without a preflight): refused as cross-site,
      // and from the dashboard's own origin still refused, as not JSON.
      const postForm = (headers: Record<string, string>) =>
        fetch(`${webUrl()}/v1/oauth/consent`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
          body: new URLSearchParams({ request: page.request, decision: "approve" }).toString(),
        });
      const crossSiteForm = await postForm({ cookie: ws.owner.cookie });
      expect(crossSiteForm.status).to.equal(403);
      expect(((await crossSiteForm.json()) as { code: string }).code).to.equal("cross_site_request");
      const form = await postForm(fromDashboard(ws.owner.cookie));
      expect(form.status).to.equal(400);
      expect(((await form.json()) as { errors: { path: string; message: string }[] }).errors[0]).to.deep.include({ path: "body" }).and.property("message").that.contains("must be JSON");
      const tampered = { request: page.request.replace(/^./, (c) => (c === "e" ? "f" : "e")) };
      for (const res of [await decide(tampered, ws.owner.cookie, "approve"), await readConsent(tampered.request, ws.owner.cookie)]) {
        expect(res.status).to.equal(400);
        expect(JSON.stringify(res.json)).to.contain("altered");
      }
      const denied = await decide(page, ws.owner.cookie, "deny");
      expect(denied.status).to.equal(200);
      const redirect = new URL(denied.json.redirect_to as string);
      expect(redirect.origin + redirect.pathname).to.equal(REDIRECT_URI);
      expect(Object.fromEntries(redirect.searchParams)).to.include({ error: "access_denied", state: "st-123", iss: webUrl() });
      expect(redirect.searchParams.has("code")).to.equal(false);
    });

    it(`keeps a request for ${REQUEST_TTL_MS / 60_000} minutes and refuses it after`, async () => {
      const page = await openConsent(authorizationUrl(await newClientId(), pkce()), ws.owner.cookie);
      const signer = new RequestSigner(testEnv().gateway.ctx.config.secretKey);
      const opened = signer.open(page.request);
      if (typeof opened === "string") throw new Error(`the page's request did not open: ${opened}`);
      const { expiresAt, ...request } = opened;
      expect(expiresAt).to.be.greaterThan(Date.now());
      const now = Date.now();
      // Sealed at `now - TTL + 2 s`, it still has two seconds; sealed at `now - TTL`, it has none.
      const lastValid = { request: signer.seal(request, now - REQUEST_TTL_MS + 2000) };
      const expired = { request: signer.seal(request, now - REQUEST_TTL_MS) };
      expect((await readConsent(expired.request, ws.owner.cookie)).status).to.equal(400);
      const refused = await decide(expired, ws.owner.cookie, "approve");
      expect(refused.status).to.equal(400);
      expect(JSON.stringify(refused.json)).to.contain("expired");
      expect((await readConsent(lastValid.request, ws.owner.cookie)).status).to.equal(200);
      const approved = await decide(lastValid, ws.owner.cookie, "approve");
      expect(approved.status).to.equal(200);
      expect(new URL(approved.json.redirect_to as string).searchParams.get("code")).to.be.a("string");
    });

    it("lets a viewer see and deny the request but not approve it", async () => {
      const viewer = await ws.addMember("viewer");
      const page = await openConsent(authorizationUrl(await newClientId(), pkce()), viewer.cookie);
      expect(page.status).to.equal(200);
      expect(page.json).to.deep.include({ role: "viewer", may_approve: false, granted_scopes: [] });
      const res = await decide(page, viewer.cookie, "approve");
      expect(res.status).to.equal(403);
      expect(res.json.code).to.equal("forbidden");
      expect(res.json).to.not.have.property("redirect_to");
      const denied = await decide(page, viewer.cookie, "deny");
      expect(denied.status).to.equal(200);
      expect(new URL(denied.json.redirect_to as string).searchParams.get("error")).to.equal("access_denied");
    });

    it("answers 403 to a signed-in person who is not a member of a workspace yet", async () => {
      const invitee = uniqueEmail("consent-invitee");
      await expectOk(ws.owner.client.team.invite({ body: { email: invitee, role: "developer" } }));
      const cookie = await signIn(invitee);
      const page = await openConsent(authorizationUrl(await newClientId(), pkce()), cookie);
      expect(page.status).to.equal(403);
      expect(page.json.code).to.equal("forbidden");
      expect((await decide(page, cookie, "approve")).status).to.equal(403);
    });

    it("binds the approval to the member who approved and caps it by their role", async () => {
      const dev = await ws.addMember("developer");
      const p = pkce();
      const clientId = await newClientId();
      const query = await consent(authorizationUrl(clientId, p, { scope: "mcp:read" }), dev.cookie);
      const rows = (await db().query(`SELECT g.workspace_id, g.scopes, u.email FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.client_id = $1`, [clientId])) as {
        workspace_id: string;
        scopes: string[];
        email: string;
      }[];
      expect(rows).to.deep.equal([{ workspace_id: ws.id, scopes: ["mcp:read"], email: dev.email }]);
      const t = await tokenRequest({ grant_type: "authorization_code", code: query.get("code")!, code_verifier: p.verifier, redirect_uri: REDIRECT_URI, client_id: clientId });
      expect(t.json.scope).to.equal("mcp:read");
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
      expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: first.json.refresh_token!, client_id: c.clientId })).json.error).to.equal("invalid_grant");
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
      expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: rotated.json.refresh_token!, client_id: t.clientId })).json.error).to.equal("invalid_grant");
    });

    it("refuses a refresh without client_id, and names a parameter given twice", async () => {
      const t = await obtainTokens(ws.owner.cookie);
      const anonymous = await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh });
      expect(anonymous.status).to.equal(400);
      expect(anonymous.json).to.include({ error: "invalid_request" });
      expect(anonymous.json.error_description).to.contain("client_id is required");
      const twice = await fetch(`${testEnv().baseUrl}/v1/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `grant_type=refresh_token&refresh_token=${t.refresh}&client_id=${t.clientId}&client_id=${t.clientId}`,
      });
      expect(twice.status).to.equal(400);
      const refused = (await twice.json()) as { error: string; error_description: string };
      expect(refused.error).to.equal("invalid_request");
      expect(refused.error_description).to.contain("client_id given twice");
      // Neither refusal spent the token: it still refreshes, once.
      const rotated = await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh, client_id: t.clientId });
      expect(rotated.status, JSON.stringify(rotated.json)).to.equal(200);
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
      expect((await http("DELETE", `/v1/members/${id}`, { headers: fromDashboard(ws.owner.cookie) })).status).to.equal(204);
      await testEnv().gateway.ctx.services.workspaces.setPlan(ws.id, "pro");
      expect(await toolsStatus(t.access)).to.equal(401);
      expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh, client_id: t.clientId })).json.error).to.equal("invalid_grant");
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
      expect((await http("DELETE", `/v1/oauth/authorizations/${mine.id}`, { headers: fromDashboard(member.cookie) })).status).to.equal(404);
      const theirs = await http("GET", "/v1/oauth/authorizations", { headers: { cookie: other.owner.cookie } });
      expect(theirs.status).to.equal(200);
      expect(theirs.json.data).to.deep.equal([]);
      expect((await http("GET", "/v1/oauth/authorizations", { headers: { authorization: `Bearer ${t.access}` } })).status).to.equal(401);
      expect((await http("DELETE", `/v1/oauth/authorizations/${mine.id}`, { headers: fromDashboard(ws.owner.cookie) })).status).to.equal(204);
      expect(await toolsStatus(t.access)).to.equal(401);
      expect((await http("DELETE", `/v1/oauth/authorizations/${mine.id}`, { headers: fromDashboard(ws.owner.cookie) })).status).to.equal(404);
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
