// The dashboard's safeguards and conveniences in a real browser: destructive actions asked in an
// alert dialog (Cancel and Escape change nothing, confirming acts), copy buttons that reach the
// clipboard, the sandbox's simulated phone on the pairing panel, and a console without errors
// where the API's 401 and 404 are expected (signed out; a connection without an AI policy).
import { expect } from "chai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { clientAddress, http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { uniquePhone } from "./support/sandbox.js";
import { browserTestsRunnable, consoleErrors, expectNarrowAndAccessible, launchBrowser, narrowContext, pageWithSession, screenshot } from "./support/browser.js";

/** The page's globals, as far as these tests read them (the test program has no DOM types). */
type PageGlobals = { document: { activeElement: unknown }; navigator: { clipboard: { readText(): Promise<string> } }; dispatchEvent(event: Event): boolean };

const webUrl = () => testEnv().gateway.ctx.config.webUrl;
const isFocused = (el: unknown) => el === (globalThis as unknown as PageGlobals).document.activeElement;

describe("dashboard: serving the page", () => {
  it("writes into the page whether the session cookie came with it, and varies on it", async () => {
    const hint = (html: string) => /<meta name="svc-session" content="([a-z]+)"/.exec(html)?.[1];
    const signedOut = await http("GET", "/", { headers: { accept: "text/html" } });
    expect(hint(signedOut.text)).to.equal("none");
    expect(signedOut.headers.get("vary")).to.match(/cookie/i);
    const withCookie = await http("GET", "/connections", { headers: { accept: "text/html", cookie: "other=1; svc_session=anything" } });
    expect(hint(withCookie.text)).to.equal("cookie");
    expect(hint((await http("GET", "/", { headers: { accept: "text/html", cookie: "svc_sessionx=1" } })).text)).to.equal("none");
    // The icon is one of the fingerprinted assets: no request for /favicon.ico, no 404.
    const icon = /<link rel="icon" type="image\/svg\+xml" href="(\/assets\/favicon-[\w-]{8}\.svg)"/.exec(signedOut.text)![1]!;
    const res = await fetch(testEnv().baseUrl + icon);
    expect([res.status, res.headers.get("content-type")]).to.deep.equal([200, "image/svg+xml"]);
  });
});

describe("dashboard: asking, copying, the sandbox's phone", function () {
  this.timeout(90_000);
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const csp: string[][] = [];
  let ws: TestWorkspace;

  async function pageAsOwner(): Promise<Page> {
    const opened = await pageWithSession(browser, ws.owner.cookie);
    contexts.push(opened.context);
    csp.push(opened.csp);
    await opened.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: webUrl() });
    return opened.page;
  }

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    browser = await launchBrowser();
    ws = await newWorkspace("pro");
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    expect(csp.flat()).to.deep.equal([]);
  });

  it("logs no error on the sign-in page, where the visitor is signed out", async () => {
    const context = await narrowContext(browser, clientAddress());
    contexts.push(context);
    const page = await context.newPage();
    const errors = consoleErrors(page);
    await page.goto(webUrl() + "/");
    await page.getByRole("heading", { name: "Sign in to svc-gateway" }).waitFor();
    await page.waitForLoadState("networkidle");
    // Focus leaving and coming back refetches what the page watches: still nothing to ask.
    await page.evaluate(() => (globalThis as unknown as PageGlobals).dispatchEvent(new Event("focus")));
    await page.waitForLoadState("networkidle");
    expect(errors).to.deep.equal([]);
  });

  it("asks in a dialog before revoking a key: Cancel and Escape change nothing, confirming revokes it", async () => {
    const { key } = await ws.key(["messages:read"]);
    const whoami = async () => (await http("GET", "/v1/whoami", { headers: { authorization: `Bearer ${key}` } })).status;
    const page = await pageAsOwner();
    await page.goto(webUrl() + "/api-keys");
    const revoke = page.getByRole("button", { name: "Revoke test key" });
    const dialog = page.getByRole("alertdialog", { name: "Revoke test key?" });

    await revoke.click();
    await dialog.waitFor();
    expect(await dialog.textContent()).to.include("Calls using it fail at once");
    // The safe choice has the focus: Enter right away changes nothing.
    expect(await dialog.getByRole("button", { name: "Cancel" }).evaluate(isFocused)).to.equal(true);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "confirm-dialog");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "detached" });
    expect(await revoke.evaluate(isFocused)).to.equal(true);
    expect(await whoami()).to.equal(200);

    await revoke.click();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    await revoke.click();
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    expect(await whoami()).to.equal(200);
    expect(await page.getByText("revoked", { exact: true }).count()).to.equal(0);

    await revoke.click();
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await page.getByText("revoked", { exact: true }).waitFor();
    expect(await whoami()).to.equal(401);
    expect(await revoke.count()).to.equal(0);
  });

  it("copies a new key to the clipboard with its button", async () => {
    const page = await pageAsOwner();
    await page.goto(webUrl() + "/api-keys");
    await page.getByLabel("Key name").fill("copied key");
    await page.getByRole("checkbox", { name: "messages:read" }).check();
    await page.getByRole("button", { name: "Issue key" }).click();
    const shown = (await page.getByLabel("API key value").textContent())!;
    expect(shown).to.match(/^svc_live_/);
    await page.getByRole("button", { name: "Copy the API key" }).click();
    await page.getByRole("status").filter({ hasText: "Copied the API key." }).waitFor();
    const copied = await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.readText());
    expect(copied).to.equal(shown);
    expect((await http("GET", "/v1/whoami", { headers: { authorization: `Bearer ${copied}` } })).status).to.equal(200);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "api-keys-copy");
    // The API reference is one click away: the OpenAPI document the SDK's types come from.
    const reference = await page.getByRole("link", { name: "API reference" }).getAttribute("href");
    const document = await http("GET", reference!, { headers: { accept: "application/json" } });
    expect([document.status, document.json.openapi]).to.deep.equal([200, "3.1.0"]);
  });

  it("pairs a sandbox connection with the simulated phone, its name beside its slug, and copies the payload", async () => {
    const page = await pageAsOwner();
    const errors = consoleErrors(page);
    await page.goto(webUrl() + "/connections");
    await page.getByLabel("Slug").fill("lobby");
    await page.getByLabel("Name (optional)").fill("Lobby phone");
    await page.getByRole("button", { name: "Create connection" }).click();
    const row = page.getByRole("listitem").filter({ has: page.getByLabel("State of lobby") });
    await row.getByText("Lobby phone", { exact: true }).waitFor();
    await row.getByText("lobby", { exact: true }).waitFor();
    expect(await page.getByLabel("State of lobby").textContent()).to.equal("created");

    await page.getByRole("button", { name: "Pair lobby" }).click();
    const panel = page.getByRole("region", { name: "Pairing lobby" });
    await panel.getByRole("img", { name: "Pairing QR code for lobby" }).waitFor();
    await panel.getByText("Show the code as text").click();
    await panel.getByRole("button", { name: "Copy the pairing payload" }).click();
    const payload = (await panel.getByLabel("Pairing payload", { exact: true }).textContent())!;
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).navigator.clipboard.readText())).to.equal(payload);
    const phone = uniquePhone("+1555");
    await panel.getByLabel("Phone number of the simulated phone").fill(phone);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "connections-simulate");
    await panel.getByRole("button", { name: "Simulate the scan" }).click();
    await panel.getByRole("status").filter({ hasText: `Connected as ${phone}` }).waitFor({ timeout: 10_000 });
    const connection = await expectOk(ws.owner.client.connections.get({ params: { connection: "lobby" } }));
    expect(connection).to.include({ state: "connected", phone, name: "Lobby phone" });
    await panel.getByRole("button", { name: "Done" }).click();
    await page.getByLabel("State of lobby").filter({ hasText: "connected" }).waitFor();
    // Elsewhere the slug comes with the name too: the connection filters.
    await page.getByRole("link", { name: "Messages" }).click();
    // The filter's options arrive with the page's connections list: waited for, then counted.
    const option = page.getByLabel("Connection").getByRole("option", { name: "Lobby phone (lobby)" });
    await option.first().waitFor({ state: "attached" });
    expect(await option.count()).to.equal(1);
    expect(errors).to.deep.equal([]);
  });

  it("offers pairing by code beside the QR: the code for the number typed, typed on the simulated phone, links it", async () => {
    await expectOk(ws.owner.client.connections.create({ body: { slug: "by-code", name: "Code phone" } }));
    const page = await pageAsOwner();
    const errors = consoleErrors(page);
    await page.goto(webUrl() + "/connections");
    await page.getByRole("button", { name: "Pair by-code" }).click();
    const panel = page.getByRole("region", { name: "Pairing by-code" });
    // The QR is the default; the code is the other choice.
    await panel.getByRole("img", { name: "Pairing QR code for by-code" }).waitFor();
    expect(await panel.getByRole("radio", { name: "Scan a QR code" }).isChecked()).to.equal(true);
    await panel.getByRole("radio", { name: "Type a code on the phone" }).check();
    await panel.getByRole("img", { name: "Pairing QR code for by-code" }).waitFor({ state: "detached" });
    // A number the API refuses is said so, and nothing links.
    await panel.getByLabel("Phone number that will link, in international form").fill("12345");
    await panel.getByRole("button", { name: "Get a pairing code" }).click();
    await panel.getByRole("alert").waitFor();
    const phone = uniquePhone("+1555");
    await panel.getByLabel("Phone number that will link, in international form").fill(phone);
    await panel.getByRole("button", { name: "Get a pairing code" }).click();
    const code = panel.getByLabel("Pairing code for by-code", { exact: true });
    await code.waitFor();
    expect(await code.textContent()).to.match(/^[1-9A-HJ-NP-TV-Z]{4}-[1-9A-HJ-NP-TV-Z]{4}$/);
    expect(await panel.getByLabel("Phone number of the simulated phone").inputValue()).to.equal(phone);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "connections-pairing-code");
    await panel.getByRole("button", { name: "Simulate typing the code" }).click();
    await panel.getByRole("status").filter({ hasText: `Connected as ${phone}` }).waitFor({ timeout: 10_000 });
    expect(await expectOk(ws.owner.client.connections.get({ params: { connection: "by-code" } }))).to.include({ state: "connected", phone });
    // The refused number answered 400 to the page: the one console error expected.
    expect(errors.filter((e) => !/status of 400/.test(e))).to.deep.equal([]);
  });

  it("offers no simulated phone where no sandbox QR was issued (an engine that is not mounted answers 503)", async () => {
    await expectOk(ws.owner.client.connections.create({ body: { slug: "elsewhere" } }));
    await testEnv().gateway.ctx.db.query(`UPDATE connections SET transport = 'not-mounted' WHERE workspace_id = $1 AND slug = 'elsewhere'`, [ws.id]);
    const page = await pageAsOwner();
    await page.goto(webUrl() + "/connections");
    await page.getByRole("button", { name: "Pair elsewhere" }).click();
    const panel = page.getByRole("region", { name: "Pairing elsewhere" });
    await panel.getByRole("alert").waitFor();
    expect(await panel.getByRole("button", { name: "Simulate the scan" }).count()).to.equal(0);
    expect(await panel.getByRole("img").count()).to.equal(0);
  });

  it("deletes a connection only once confirmed", async () => {
    await expectOk(ws.owner.client.connections.create({ body: { slug: "short-lived", name: "Short lived" } }));
    const page = await pageAsOwner();
    await page.goto(webUrl() + "/connections");
    await page.getByRole("button", { name: "Delete short-lived" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Delete Short lived?" });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    expect((await ws.owner.client.connections.get({ params: { connection: "short-lived" } })).status).to.equal(200);
    await page.getByRole("button", { name: "Delete short-lived" }).click();
    await dialog.getByRole("button", { name: "Delete connection" }).click();
    await page.getByLabel("State of short-lived").waitFor({ state: "detached" });
    expect((await ws.owner.client.connections.get({ params: { connection: "short-lived" } })).status).to.equal(404);
  });
});
