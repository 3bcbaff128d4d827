// The OAuth consent page in a real browser: an MCP client (raw HTTP registration and PKCE) sends the
// member to the authorization URL; signed out, the dashboard signs them in where they are and shows
// the consent; approving reaches the client's loopback redirect URI with code, state and iss, and
// the code exchanges for a token that works on the tool endpoint; denying answers access_denied.
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { REQUEST_TTL_MS, RequestSigner } from "../server/oauth/authorize-request.js";
import { testEnv } from "./setup.js";
import { clientAddress, http, newWorkspace, uniqueEmail } from "./support/actors.js";
import { authorizationUrl, pkce, registerClient, sealedRequest, tokenRequest, toolResource, webUrl, type Pkce } from "./support/oauth.js";
import { browserTestsRunnable, cspViolations, expectAccessible, narrowContext, openNarrowPage, screenshot } from "./support/browser.js";

describe("dashboard: the OAuth consent page", function () {
  this.timeout(60_000);
  let browser: Browser;
  let page: Page;
  let csp: string[];
  let callback: Server;
  let redirectUri = "";
  /** The query strings the client's redirect URI received, newest last. */
  const received: URLSearchParams[] = [];
  const email = uniqueEmail("consent");
  let clientId = "";

  /** A fresh authorization by the client, as an MCP client starts one: PKCE, state, resource. */
  function authorization(state: string, scope = "mcp:read mcp:write"): { url: string; p: Pkce } {
    const p = pkce();
    return { url: authorizationUrl(clientId, p, { redirect_uri: redirectUri, state, scope }), p };
  }

  /** Waits until the browser stands on the client's redirect URI; answers what it was given. */
  async function redirected(): Promise<URLSearchParams> {
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    await page.getByText("Back at the client").waitFor();
    return received.at(-1)!;
  }

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    callback = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      // The browser asks for /favicon.ico too.
      if (url.pathname === "/callback") received.push(url.searchParams);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>Client</title><p>Back at the client</p>");
    });
    await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
    redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    await testEnv().gateway.ctx.services.workspaces.create(`Consent ${email}`, email, "pro");
    const registered = await registerClient([redirectUri]);
    expect(registered.status).to.equal(201);
    clientId = ((await registered.json()) as { client_id: string }).client_id;
    ({ browser, page, csp } = await openNarrowPage(clientAddress()));
  });
  after(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (callback ? callback.close(() => resolve()) : resolve()));
  });

  it("signs a signed-out member in where they are, shows the request, and approves it by keyboard; the code works on the tool endpoint", async () => {
    const { mailbox } = testEnv();
    const { url, p } = authorization("state-approve");
    await page.goto(url);
    expect(new URL(page.url()).pathname).to.equal("/oauth/consent");
    await page.getByRole("heading", { name: "Sign in to svc-gateway" }).waitFor();
    const since = mailbox.mails.length;
    await page.getByLabel("E-mail address").fill(email);
    await page.getByRole("button", { name: "Send me a code" }).click();
    const [, code] = await mailbox.waitFor(email, /sign-in code is (\d{6})/, since);
    await page.getByLabel("Sign-in code").fill(code!);
    await page.getByRole("button", { name: "Sign in" }).click();

    await page.getByRole("heading", { name: "Allow access to your workspace?" }).waitFor();
    const main = page.getByRole("main");
    await main.getByText("Test assistant").first().waitFor();
    const text = (await main.textContent()) ?? "";
    expect(text).to.contain(`Consent ${email}`).and.contain(new URL(redirectUri).host).and.contain(clientId);
    expect(text).to.contain("Send messages").and.contain("never their content");
    expect(text).to.contain("As owner, approving grants mcp:read and mcp:write");
    await expectAccessible(page);
    await screenshot(page, "oauth-consent");

    await page.getByRole("button", { name: "Approve" }).focus();
    await page.keyboard.press("Enter");
    const query = await redirected();
    expect(query.get("state")).to.equal("state-approve");
    expect(query.get("iss")).to.equal(webUrl());
    const t = await tokenRequest({ grant_type: "authorization_code", code: query.get("code")!, code_verifier: p.verifier, redirect_uri: redirectUri, client_id: clientId, resource: toolResource() });
    expect(t.status, JSON.stringify(t.json)).to.equal(200);
    expect(t.json.scope).to.equal("mcp:read mcp:write");
    const tools = await http("POST", "/v1/mcp", {
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
      headers: { authorization: `Bearer ${t.json.access_token}`, accept: "application/json, text/event-stream" },
    });
    expect(tools.status).to.equal(200);
    expect((tools.json.result as { tools: { name: string }[] }).tools.map((x) => x.name)).to.include("send_message");
  });

  it("denies by keyboard: the client receives access_denied with its state and no code", async () => {
    await page.goto(authorization("state-deny").url);
    await page.getByRole("heading", { name: "Allow access to your workspace?" }).waitFor();
    await page.getByRole("button", { name: "Deny" }).focus();
    await page.keyboard.press("Enter");
    const query = await redirected();
    expect(query.get("error")).to.equal("access_denied");
    expect(query.get("state")).to.equal("state-deny");
    expect(query.has("code")).to.equal(false);
  });

  it("shows a viewer the request and the role's cap, with Deny only", async () => {
    const ws = await newWorkspace();
    const viewer = await ws.addMember("viewer");
    const theirs = await narrowContext(browser, clientAddress());
    try {
      const [name, value] = viewer.cookie.split("=") as [string, string];
      await theirs.addCookies([{ name, value, url: webUrl(), httpOnly: true, sameSite: "Lax" }]);
      const them = await theirs.newPage();
      const violations = cspViolations(them);
      await them.goto(authorization("state-viewer").url);
      await them.getByRole("heading", { name: "Allow access to your workspace?" }).waitFor();
      await them.getByText("Your role (viewer) cannot approve tool access; an owner, admin or developer can.").waitFor();
      expect(await them.getByText("(not granted: your role does not allow it)").count()).to.equal(2);
      expect(await them.getByRole("button", { name: "Approve" }).count()).to.equal(0);
      await expectAccessible(them);
      await screenshot(them, "oauth-consent-viewer");
      await them.getByRole("button", { name: "Deny" }).click();
      await them.waitForURL((u) => u.href.startsWith(redirectUri));
      expect(received.at(-1)!.get("error")).to.equal("access_denied");
      expect(received.at(-1)!.get("state")).to.equal("state-viewer");
      expect(violations).to.deep.equal([]);
    } finally {
      await theirs.close();
    }
  });

  it("shows an expired or altered request as the API's problem, with its request id, and offers no decision", async () => {
    const signer = new RequestSigner(testEnv().gateway.ctx.config.secretKey);
    const opened = signer.open(await sealedRequest(authorization("state-expired").url));
    if (typeof opened === "string") throw new Error(`the request did not open: ${opened}`);
    const { expiresAt: _, ...request } = opened;
    const expired = signer.seal(request, Date.now() - REQUEST_TTL_MS);
    await page.goto(`${webUrl()}/oauth/consent?request=${encodeURIComponent(expired)}`);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).to.contain("has expired").and.match(/Request ID: \S+/);
    expect(await page.getByRole("button", { name: "Approve" }).count()).to.equal(0);
    await expectAccessible(page);
    await screenshot(page, "oauth-consent-expired");

    await page.goto(`${webUrl()}/oauth/consent?request=${encodeURIComponent(`${expired.slice(0, -2)}xx`)}`);
    await page.getByRole("alert").getByText(/altered/).first().waitFor();
    expect(csp).to.deep.equal([]);
  });
});
