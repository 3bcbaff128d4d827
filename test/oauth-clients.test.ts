// The authorization server as clients in the wild use it: the MCP SDK's own client-side OAuth flow
// (discovery, registration, PKCE, consent by a signed-in member, code exchange, refresh), and
// oauth4webapi as an independent client of the same flow.
import { expect } from "chai";
import * as oauth from "oauth4webapi";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { auth, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { consent, REDIRECT_URI, toolResource, webUrl } from "./support/oauth.js";

/** What an assistant keeps between runs, in memory. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  lastAuthorizationUrl: URL | undefined;
  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "SDK test assistant", redirect_uris: [REDIRECT_URI], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.lastAuthorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

function transport(provider: OAuthClientProvider) {
  return new StreamableHTTPClientTransport(new URL(toolResource()), { authProvider: provider });
}

describe("OAuth for the tool endpoint: real clients", () => {
  let ws: TestWorkspace;

  before(async () => {
    ws = await newWorkspace();
  });

  it("the MCP SDK client registers, gets consent, exchanges the code, lists and calls tools, and refreshes", async () => {
    const provider = new MemoryProvider();
    const first = new Client({ name: "sdk-oauth", version: "1.0.0" });
    const t1 = transport(provider);
    let unauthorized: unknown;
    await first.connect(t1).catch((err: unknown) => (unauthorized = err));
    expect(String(unauthorized)).to.match(/Unauthorized/i);
    expect(provider.info?.client_id).to.match(/^ocl_/);
    const authUrl = provider.lastAuthorizationUrl!;
    expect(authUrl.searchParams.get("code_challenge_method")).to.equal("S256");
    expect(authUrl.searchParams.get("resource")).to.equal(toolResource());

    const query = await consent(authUrl.toString(), ws.owner.cookie);
    expect(query.get("iss")).to.equal(webUrl());
    expect(query.get("state")).to.equal(authUrl.searchParams.get("state"));
    await t1.finishAuth(query.get("code")!);
    expect(provider.saved?.access_token).to.match(/^svc_mcp_at_/);
    expect(provider.saved?.refresh_token).to.match(/^svc_mcp_rt_/);

    const client = new Client({ name: "sdk-oauth", version: "1.0.0" });
    await client.connect(transport(provider));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).to.include.members(["whoami", "send_message"]);
    const who = await client.callTool({ name: "whoami", arguments: {} });
    expect(who.structuredContent).to.deep.include({ scopes: ["mcp:read", "mcp:write"] });
    expect((who.structuredContent as { workspace: { id: string } }).workspace.id).to.equal(ws.id);
    await client.close();

    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: toolResource() })).to.equal("AUTHORIZED");
    expect(provider.saved!.access_token).to.not.equal(before.access_token);
    expect(provider.saved!.refresh_token).to.not.equal(before.refresh_token);
    const again = new Client({ name: "sdk-oauth", version: "1.0.0" });
    await again.connect(transport(provider));
    expect((await again.listTools()).tools).to.not.be.empty;
    await again.close();

    const listed = await http("GET", "/v1/oauth/authorizations", { headers: { cookie: ws.owner.cookie } });
    expect(listed.status).to.equal(200);
    const mine = (listed.json.data as { client_id: string; client_name: string; redirect_host: string; last_used_at: string | null }[]).find(
      (a) => a.client_id === provider.info!.client_id,
    );
    expect(mine).to.include({ client_name: "SDK test assistant", redirect_host: "127.0.0.1:53682" });
    expect(mine!.last_used_at).to.be.a("string");
  });

  it("oauth4webapi discovers, registers, authorizes with PKCE, validates iss and state, exchanges and refreshes", async () => {
    const opts = { [oauth.allowInsecureRequests]: true };
    const issuer = new URL(webUrl());
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }));
    expect(as.code_challenge_methods_supported).to.deep.equal(["S256"]);
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none", client_name: "oauth4webapi" }, opts),
    );
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: "none" };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      scope: "mcp:read",
      state,
      resource: toolResource(),
    })) {
      url.searchParams.set(k, v);
    }
    const query = await consent(url.toString(), ws.owner.cookie);
    const params = oauth.validateAuthResponse(as, client, new URL(`${REDIRECT_URI}?${query}`), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT_URI, verifier, { ...opts, additionalParameters: { resource: toolResource() } }),
    );
    expect(tokens.access_token).to.match(/^svc_mcp_at_/);
    expect(tokens.expires_in).to.equal(3600);
    expect(tokens.scope).to.equal("mcp:read");
    const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts));
    expect(refreshed.access_token).to.not.equal(tokens.access_token);
    const tools = await http("POST", "/v1/mcp", {
      headers: { authorization: `Bearer ${refreshed.access_token}`, accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
    });
    expect(tools.status).to.equal(200);
    // mcp:read only: the mutating tools are not offered.
    expect(JSON.stringify(tools.json)).to.not.contain("send_message");
  });
});
