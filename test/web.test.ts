// The dashboard in a real browser against the test gateway: served with its headers, signed into
// by the code from the captured mail, keys issued and shown once, the session's end noticed.
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { testEnv } from "./setup.js";
import { clientAddress, fromDashboard, http, uniqueEmail } from "./support/actors.js";
import { scan, uniquePhone } from "./support/sandbox.js";
import { obtainTokens } from "./support/oauth.js";
import { browserTestsRunnable, expectAccessible, narrowContext, openNarrowPage, screenshot } from "./support/browser.js";

/** The page's globals, as far as these tests read them (the test program has no DOM types). */
type PageGlobals = {
  document: { cookie: string; activeElement: unknown };
  localStorage: { length: number };
  sessionStorage: { length: number };
  marker?: number;
};

describe("dashboard: serving", () => {
  it("serves the page with a strict CSP and no inline script, its assets fingerprinted and cached for a year", async () => {
    const page = await http("GET", "/", { headers: { accept: "text/html" } });
    expect(page.status).to.equal(200);
    expect(page.headers.get("content-type")).to.match(/^text\/html/);
    expect(page.headers.get("cache-control")).to.equal("no-cache");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).to.include("script-src 'self'").and.include("frame-ancestors 'none'").and.not.include("unsafe");
    expect(page.text).to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/);
    const asset = /src="(\/assets\/[\w-]+-[\w-]{8}\.js)"/.exec(page.text)![1]!;
    const js = await fetch(testEnv().baseUrl + asset);
    expect(js.status).to.equal(200);
    expect(js.headers.get("cache-control")).to.equal("public, max-age=31536000, immutable");
  });

  it("serves the page for the page's own routes, and leaves the API's paths to the API", async () => {
    expect((await http("GET", "/api-keys", { headers: { accept: "text/html" } })).status).to.equal(200);
    // Not a navigation: a JSON client asking for an unknown path still gets the problem.
    const json = await http("GET", "/api-keys", { headers: { accept: "application/json" } });
    expect(json.status).to.equal(404);
    expect(json.json.code).to.equal("not_found");
    for (const path of ["/v1/whoami", "/v1/nothing-here", "/.well-known/nothing", "/sandbox/v1/nothing"]) {
      const res = await http("GET", path, { headers: { accept: "text/html" } });
      expect(res.headers.get("content-type"), path).to.match(/problem\+json/);
    }
    const missingAsset = await http("GET", "/assets/missing-00000000.js", { headers: { accept: "*/*" } });
    expect(missingAsset.status).to.equal(404);
  });
});

describe("dashboard: in a browser", function () {
  this.timeout(60_000);
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let csp: string[];
  const email = uniqueEmail("dash");
  /** The key issued through the page (messages:read, messages:write), for the API's side of later tests. */
  let issuedKey = "";

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    await testEnv().gateway.ctx.services.workspaces.create(`Dashboard ${email}`, email, "enterprise");
    ({ browser, context, page, csp } = await openNarrowPage(clientAddress()));
  });
  after(async () => {
    await browser?.close();
  });

  it("signs in with the keyboard alone, with the code from the mail; a wrong code shows the problem and its request id", async () => {
    const { mailbox, gateway } = testEnv();
    // The address the gateway prints and trusts as the dashboard's origin.
    await page.goto(gateway.ctx.config.webUrl + "/");
    await page.getByRole("heading", { name: "Sign in to svc-gateway" }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "sign-in");
    const since = mailbox.mails.length;
    await page.keyboard.press("Tab");
    expect(await page.getByLabel("E-mail address").evaluate((el) => el === (globalThis as unknown as PageGlobals).document.activeElement)).to.equal(true);
    await page.keyboard.type(email);
    await page.keyboard.press("Enter");
    await page.getByLabel("Sign-in code").waitFor();
    const [, code] = await mailbox.waitFor(email, /sign-in code is (\d{6})/, since);
    const wrong = code === "000000" ? "111111" : "000000";
    await page.getByLabel("Sign-in code").focus();
    await page.keyboard.type(wrong);
    await page.keyboard.press("Enter");
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).to.match(/Request ID: req_\w+|Request ID: \S+/);
    await page.getByLabel("Sign-in code").fill("");
    await page.keyboard.type(code!);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByText("Messages this month").waitFor();
    await page.getByRole("img", { name: /messages sent and received per day/ }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "overview");
    // The session lives in an HttpOnly cookie only: nothing the page's script can read or keep.
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === "svc_session")?.httpOnly).to.equal(true);
    expect(await page.evaluate(() => {
      const g = globalThis as unknown as PageGlobals;
      return [g.document.cookie, g.localStorage.length, g.sessionStorage.length];
    })).to.deep.equal(["", 0, 0]);
  });

  it("issues a key with the keyboard, shows it once, and offers only the scopes the role may grant", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { name: "API keys", exact: true }).waitFor();
    // An owner may grant all twelve issuable scopes; usage:read cannot be issued at all.
    expect(await page.getByRole("group", { name: "Scopes" }).getByRole("checkbox").count()).to.equal(12);
    await page.getByLabel("Key name").focus();
    await page.keyboard.type("ci deploys");
    await page.keyboard.press("Tab"); // environment
    await page.keyboard.press("Tab"); // first scope: messages:read
    await page.keyboard.press("Space");
    await page.keyboard.press("Tab"); // messages:write
    await page.keyboard.press("Space");
    await page.getByLabel("Key name").focus();
    await page.keyboard.press("Enter");
    const shown = page.getByLabel("API key value");
    await shown.waitFor({ timeout: 5000 }).catch(async (e: unknown) => {
      await screenshot(page, "api-keys-failed");
      throw e;
    });
    const key = (await shown.textContent())!;
    expect(key).to.match(/^svc_live_/);
    issuedKey = key;
    await expectAccessible(page);
    await screenshot(page, "api-keys");
    // The key works, with exactly the scopes ticked.
    const whoami = await http("GET", "/v1/whoami", { headers: { authorization: `Bearer ${key}` } });
    expect(whoami.status).to.equal(200);
    expect(whoami.json.scopes).to.deep.equal(["messages:read", "messages:write"]);
    // Once: leaving the page forgets it, and the list shows the prefix only.
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByText("ci deploys").first().waitFor();
    expect(await page.getByLabel("API key value").count()).to.equal(0);
    expect(await page.content()).to.not.include(key);
    expect(await page.evaluate(() => {
      const g = globalThis as unknown as PageGlobals;
      return [g.localStorage.length, g.sessionStorage.length];
    })).to.deep.equal([0, 0]);
  });

  it("creates a sandbox connection, shows a live pairing QR, and turns connected when the phone scans it", async () => {
    await page.getByRole("link", { name: "Connections" }).click();
    await page.getByRole("heading", { name: "Connections", exact: true }).waitFor();
    await page.getByLabel("Slug").fill("front-desk");
    await page.getByLabel("Slug").press("Enter");
    await page.getByRole("button", { name: "Pair front-desk" }).click();
    await page
      .getByRole("img", { name: "Pairing QR code for front-desk" })
      .waitFor()
      .catch(async (err: Error) => {
        // Whatever the page says instead (a problem's detail and request id) is the lead.
        throw new Error(`${err.message}\npage alerts: ${JSON.stringify(await page.getByRole("alert").allTextContents())}`);
      });
    await expectAccessible(page);
    await screenshot(page, "connections-pairing");
    // The phone: the sandbox's scan of what the QR encodes.
    const payload = (await page.getByLabel("Pairing payload", { exact: true }).textContent())!;
    const phone = uniquePhone();
    await scan(payload, phone);
    await page.getByRole("status").filter({ hasText: `Connected as ${phone}` }).waitFor({ timeout: 10_000 });
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByLabel("State of front-desk").textContent()).to.equal("connected");
    await page.getByRole("button", { name: "Suspend front-desk" }).click();
    await page.getByLabel("State of front-desk").filter({ hasText: "suspended" }).waitFor();
    await page.getByRole("button", { name: "Resume front-desk" }).click();
    await page.getByRole("button", { name: "Suspend front-desk" }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "connections");
  });

  it("shows a message sent from the API, filtered, and its timeline", async () => {
    const to = uniquePhone();
    const sent = await http("POST", "/v1/messages/text", {
      body: { connection: "front-desk", to, body: "Hello from the API" },
      headers: { authorization: `Bearer ${issuedKey}` },
    });
    expect(sent.status).to.equal(202);
    await page.getByRole("link", { name: "Messages" }).click();
    await page.getByRole("heading", { name: "Messages", exact: true }).waitFor();
    await page.getByLabel("Direction").selectOption("outbound");
    await page.getByLabel("Connection").selectOption("front-desk");
    await page.getByRole("link", { name: "Hello from the API" }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "messages");
    // A filter that excludes it: nothing matches.
    await page.getByLabel("Direction").selectOption("inbound");
    await page.getByText("No messages match.").waitFor();
    await page.getByLabel("Direction").selectOption("outbound");
    await page.getByRole("link", { name: "Hello from the API" }).click();
    await page.getByRole("heading", { name: "Message", exact: true }).waitFor();
    const timeline = page.getByRole("list", { name: "Timeline" });
    await timeline.getByText("accepted").waitFor();
    expect(await page.getByText(`${sent.json.id as string}`).count()).to.equal(1);
    await expectAccessible(page);
    await screenshot(page, "message-timeline");
  });

  it("shows the workspace's events as they happen, without a reload", async () => {
    await page.getByRole("link", { name: "Events" }).click();
    await page.getByRole("heading", { name: "Events", exact: true }).waitFor();
    await page.getByRole("status").filter({ hasText: "Listening" }).waitFor();
    await page.evaluate(() => ((globalThis as unknown as PageGlobals).marker = 7));
    const sent = await http("POST", "/v1/messages/text", {
      body: { connection: "front-desk", to: uniquePhone(), body: "watched live" },
      headers: { authorization: `Bearer ${issuedKey}` },
    });
    expect(sent.status).to.equal(202);
    const list = page.getByRole("list", { name: "Events" });
    // The event arrives while the page stays open; its payload is the one webhooks deliver.
    const queued = list.getByRole("listitem").filter({ hasText: "message.queued" }).filter({ hasText: sent.json.id as string });
    await queued.waitFor({ timeout: 10_000 });
    await queued.getByText("message.queued", { exact: true }).click();
    await queued.getByText("watched live").waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).marker)).to.equal(7);
    await expectAccessible(page);
    await screenshot(page, "events");
  });

  it("registers a webhook endpoint, shows its secret once, its delivery log, and resends a delivery", async () => {
    let received = 0;
    const receiver: Server = createServer((req, res) => {
      received++;
      req.resume();
      req.on("end", () => res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      await page.getByRole("link", { name: "Webhooks" }).click();
      await page.getByRole("heading", { name: "Webhooks", exact: true }).waitFor();
      await page.getByLabel("Endpoint URL").fill(url);
      await page.getByRole("checkbox", { name: "message.queued" }).check();
      await page.getByRole("button", { name: "Add endpoint" }).click();
      const secret = (await page.getByLabel("Signing secret value").textContent())!;
      expect(secret).to.have.length.greaterThan(16);
      await expectAccessible(page);
      await screenshot(page, "webhooks");
      await page.getByRole("button", { name: "I have copied it" }).click();
      expect(await page.content()).to.not.include(secret);
      const sent = await http("POST", "/v1/messages/text", {
        body: { connection: "front-desk", to: uniquePhone(), body: "for the hook" },
        headers: { authorization: `Bearer ${issuedKey}` },
      });
      expect(sent.status).to.equal(202);
      await page.getByRole("button", { name: `Deliveries of ${url}` }).click();
      const log = page.getByRole("region", { name: `Deliveries of ${url}` });
      await log.getByText("succeeded").first().waitFor({ timeout: 15_000 });
      const before = received;
      await log.getByRole("button", { name: /^Resend message\.queued/ }).first().click();
      await log.getByText(/^manual/).first().waitFor({ timeout: 15_000 });
      expect(received).to.be.greaterThan(before);
      await expectAccessible(page);
      await screenshot(page, "webhook-deliveries");
    } finally {
      receiver.close();
    }
  });

  it("invites a member, who follows the e-mail's link, signs in and accepts", async () => {
    const { mailbox, gateway } = testEnv();
    const invitee = uniqueEmail("invitee");
    const since = mailbox.mails.length;
    await page.getByRole("link", { name: "Team" }).click();
    await page.getByRole("heading", { name: "Team", exact: true }).waitFor();
    await page.getByLabel("E-mail address to invite").fill(invitee);
    await page.getByLabel("Role").selectOption("developer");
    await page.getByRole("button", { name: "Send invitation" }).click();
    await page.getByRole("button", { name: `Cancel the invitation of ${invitee}` }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "team");
    const [link] = await mailbox.waitFor(invitee, /\S+\/invitations\/accept\?token=[A-Za-z0-9_-]+/, since);
    expect(link.startsWith(gateway.ctx.config.webUrl + "/")).to.equal(true);
    // The invitee, in a browser of their own.
    const theirs = await narrowContext(browser, clientAddress());
    try {
      const them = await theirs.newPage();
      const signInSince = mailbox.mails.length;
      await them.goto(link);
      await them.getByLabel("E-mail address").fill(invitee);
      await them.getByRole("button", { name: "Send me a code" }).click();
      const [, code] = await mailbox.waitFor(invitee, /sign-in code is (\d{6})/, signInSince);
      await them.getByLabel("Sign-in code").fill(code!);
      await them.getByRole("button", { name: "Sign in" }).click();
      await them.getByRole("heading", { name: "Accept the invitation" }).waitFor();
      await expectAccessible(them);
      await screenshot(them, "invitation-accept");
      await them.getByRole("button", { name: "Accept the invitation" }).click();
      await them.getByRole("heading", { name: "Overview" }).waitFor();
      await them.getByText(`${invitee} (developer)`).waitFor();
    } finally {
      await theirs.close();
    }
    await page.reload();
    await page.getByLabel(`Role of ${invitee}`).waitFor();
    expect(await page.getByLabel(`Role of ${invitee}`).inputValue()).to.equal("developer");
  });

  it("lists the MCP clients the member approved, and revokes one", async () => {
    const cookie = (await context.cookies()).find((c) => c.name === "svc_session")!;
    const { access } = await obtainTokens(`svc_session=${cookie.value}`);
    await page.getByRole("link", { name: "MCP clients" }).click();
    await page.getByRole("heading", { name: "MCP clients", exact: true }).waitFor();
    await page.getByText("Test assistant").waitFor();
    await expectAccessible(page);
    await screenshot(page, "mcp-clients");
    await page.getByRole("button", { name: "Revoke Test assistant" }).click();
    await page.getByRole("alertdialog", { name: "Revoke Test assistant?" }).getByRole("button", { name: "Revoke access" }).click();
    await page.getByText("No authorized clients.").waitFor();
    const call = await http("POST", "/v1/mcp", { body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, headers: { authorization: `Bearer ${access}`, accept: "application/json, text/event-stream" } });
    expect(call.status).to.equal(401);
  });

  it("returns to sign-in without a reload when the session ends elsewhere", async () => {
    await page.evaluate(() => ((globalThis as unknown as PageGlobals).marker = 42));
    const cookie = (await context.cookies()).find((c) => c.name === "svc_session")!;
    const out = await http("POST", "/v1/auth/logout", { headers: fromDashboard(`svc_session=${cookie.value}`) });
    expect(out.status).to.equal(204);
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByRole("heading", { name: "Sign in to svc-gateway" }).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).marker)).to.equal(42);
    expect(csp).to.deep.equal([]);
  });
});
