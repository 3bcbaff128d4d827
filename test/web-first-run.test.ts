// A new user's whole first run, in a real browser, without curl: a gateway
// started as the README's first command starts it (`npm start`: no configuration, the embedded
// database in a fresh DATA_DIR, mail to the development outbox in the log), its printed dashboard
// address opened, sign-in with the code from the log, a sandbox connection created and paired with
// the keyboard alone, and a message composed and sent from the messages page until it is read.
import { expect } from "chai";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { clientAddress } from "./support/actors.js";
import { startChildGateway, type ChildGateway } from "./support/child-gateway.js";
import { sandbox, scan, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";
import { browserTestsRunnable, expectAccessible, openNarrowPage, screenshot } from "./support/browser.js";

/** The page's globals, as far as these tests read them (the test program has no DOM types). */
type PageGlobals = { document: { activeElement: unknown } };

/** Presses Tab until `target` has the focus: how a keyboard user gets to it. */
async function tabTo(page: Page, target: Locator, maxPresses = 40): Promise<void> {
  for (let i = 0; i <= maxPresses; i++) {
    const focused = await target.evaluate((el) => el === (globalThis as unknown as PageGlobals).document.activeElement).catch(() => false);
    if (focused) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`${String(target)} not reached with ${maxPresses} presses of Tab`);
}

describe("dashboard: a new user's first run, without curl", function () {
  this.timeout(120_000);
  let gateway: ChildGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let csp: string[];
  let dashboardUrl = "";
  const slug = "first-line";
  const linkedPhone = uniquePhone();
  /** Each POST of a send the page makes, with its Idempotency-Key. */
  const sends: string[] = [];

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    // `npm ci && npm start` with nothing configured: only the port differs (3000 may be taken).
    gateway = await startChildGateway({
      DATABASE_URL: undefined,
      SECRET_KEY: undefined,
      SMTP_URL: undefined,
      NODE_ENV: undefined,
      LOG_LEVEL: undefined,
      BAILEYS_SOCKET_MODULE: undefined,
    });
    ({ browser, context, page, csp } = await openNarrowPage(clientAddress()));
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname === "/v1/messages/text") sends.push(r.headers()["idempotency-key"] ?? "");
    });
  });

  after(async () => {
    await browser?.close();
    await gateway?.terminate();
  });

  /** The sign-in codes the development outbox has logged after `since` characters of output. */
  const codesAfter = (since: number) => [...gateway.output().slice(since).matchAll(/sign-in code is (\d{6})/g)].map((m) => m[1]!);

  async function sessionCookie(): Promise<string> {
    const cookie = (await context.cookies()).find((c) => c.name === "svc_session");
    return `svc_session=${cookie!.value}`;
  }

  it("prints one line with the dashboard's address", async () => {
    const line = await waitFor(
      async () => /dashboard: open (\S+) in a browser/.exec(gateway.output()),
      (m) => m !== null,
      10_000,
    );
    dashboardUrl = line![1]!;
    expect(dashboardUrl).to.equal(`http://localhost:${new URL(gateway.url).port}/`);
    // The first start names the owner to sign in as, and where.
    expect(gateway.output()).to.include(`created the first workspace, owned by admin@localhost. Sign in at ${dashboardUrl} as admin@localhost`);
  });

  it("opens the printed address and signs in with the keyboard, with the code from the log", async () => {
    await page.goto(dashboardUrl);
    await page.getByRole("heading", { name: "Sign in to svc-gateway" }).waitFor();
    await expectAccessible(page);
    const since = gateway.output().length;
    await tabTo(page, page.getByLabel("E-mail address"));
    await page.keyboard.type("admin@localhost");
    await page.keyboard.press("Enter");
    await page.getByLabel("Sign-in code").waitFor();
    const [code] = await waitFor(async () => codesAfter(since), (c) => c.length === 1, 10_000);
    await tabTo(page, page.getByLabel("Sign-in code"));
    await page.keyboard.type(code!);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByText("admin@localhost (owner)").waitFor();
    await expectAccessible(page);
    await screenshot(page, "first-run-overview");
  });

  it("creates a sandbox connection and pairs it with the keyboard alone", async () => {
    await tabTo(page, page.getByRole("link", { name: "Connections" }));
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Connections", exact: true }).waitFor();
    await tabTo(page, page.getByLabel("Slug"));
    await page.keyboard.type(slug);
    await page.keyboard.press("Enter");
    const pair = page.getByRole("button", { name: `Pair ${slug}` });
    await pair.waitFor();
    await tabTo(page, pair);
    await page.keyboard.press("Enter");
    await page.getByRole("img", { name: `Pairing QR code for ${slug}` }).waitFor();
    await tabTo(page, page.getByText("Show the code as text"));
    await page.keyboard.press("Space");
    const payload = (await page.getByLabel("Pairing payload", { exact: true }).textContent())!;
    await expectAccessible(page);
    await screenshot(page, "first-run-pairing");
    // The phone scans the code: the sandbox's control API plays it.
    await scan(payload, linkedPhone, gateway.url);
    await page.getByRole("status").filter({ hasText: `Connected as ${linkedPhone}` }).waitFor({ timeout: 15_000 });
    await tabTo(page, page.getByRole("button", { name: "Done" }));
    await page.keyboard.press("Enter");
    expect(await page.getByLabel(`State of ${slug}`).textContent()).to.equal("connected");
  });

  it("composes and sends a message from the messages page; it reaches the phone and its timeline says so", async () => {
    const to = uniquePhone();
    await tabTo(page, page.getByRole("link", { name: "Messages" }));
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Send a message" }).waitFor();
    // The connected connection is offered, and chosen already.
    expect(await page.getByLabel("Send from").inputValue()).to.equal(slug);
    await tabTo(page, page.getByLabel("To (phone number)"));
    await page.keyboard.type(to);
    await page.keyboard.press("Tab");
    await page.keyboard.type("Hello from the dashboard");
    await expectAccessible(page);
    await screenshot(page, "messages-compose");
    await tabTo(page, page.getByRole("button", { name: "Send message" }));
    await page.keyboard.press("Enter");
    // The new message's timeline opens and follows it to delivered (or read).
    await page.getByRole("heading", { name: "Message", exact: true }).waitFor();
    await page.getByText("Hello from the dashboard").waitFor();
    const timeline = page.getByRole("list", { name: "Timeline" });
    await timeline.getByText(/^(delivered|read)$/).first().waitFor({ timeout: 20_000 });
    await expectAccessible(page);
    await screenshot(page, "first-run-timeline");
    const received = await sandbox("GET", `/received?to=${encodeURIComponent(to)}`, undefined, gateway.url);
    expect(JSON.stringify(received.json.data)).to.include("Hello from the dashboard");
    // And it is in the list.
    await page.getByRole("link", { name: "All messages" }).click();
    await page.getByRole("link", { name: "Hello from the dashboard" }).waitFor();
    expect(sends).to.have.length(1);
    expect(sends[0]).to.match(/^[0-9a-f-]{36}$/);
  });

  it("sends once on a double click, with one Idempotency-Key per composition", async () => {
    const before = sends.length;
    await page.getByLabel("To (phone number)").fill(uniquePhone());
    await page.getByLabel("Text").fill("Clicked twice");
    await page.getByRole("button", { name: "Send message" }).dblclick();
    await page.getByRole("heading", { name: "Message", exact: true }).waitFor();
    await page.getByText("Clicked twice").waitFor();
    const listed = await fetch(`${gateway.url}/v1/messages?limit=100`, { headers: { cookie: await sessionCookie() } });
    const bodies = ((await listed.json()) as { data: { body: string | null }[] }).data.map((m) => m.body);
    expect(bodies.filter((b) => b === "Clicked twice")).to.have.length(1);
    const keys = sends.slice(before);
    expect(keys.length).to.be.greaterThan(0);
    expect(new Set(keys).size).to.equal(1);
    // The composition before had a key of its own.
    expect(keys[0]).to.not.equal(sends[before - 1]);
  });

  it("refuses what the contract refuses before sending, and shows the gateway's refusal with its detail and request id", async () => {
    await page.getByRole("link", { name: "All messages" }).click();
    await page.getByRole("heading", { name: "Send a message" }).waitFor();
    const before = sends.length;
    // A recipient one character short of the shortest (5): refused on the page, nothing sent.
    await page.getByLabel("To (phone number)").fill("+155");
    await page.getByLabel("Text").fill("Not yet");
    await page.getByRole("button", { name: "Send message" }).click();
    await page.getByRole("alert").filter({ hasText: "to:" }).waitFor();
    expect(sends.length).to.equal(before);
    // Suspended in another tab meanwhile: the gateway refuses, the page says why.
    const suspended = await fetch(`${gateway.url}/v1/connections/${slug}/suspend`, { method: "POST", headers: { cookie: await sessionCookie(), "content-type": "application/json" } });
    expect(suspended.status).to.equal(200);
    await page.getByLabel("To (phone number)").fill("+1555");
    await page.getByRole("button", { name: "Send message" }).click();
    const alert = page.getByRole("alert").filter({ hasText: "Request ID:" });
    await alert.waitFor();
    expect(await alert.textContent()).to.include(`The connection ${slug} is suspended, not connected.`);
    expect(sends.length).to.equal(before + 1);
    await expectAccessible(page);
    await screenshot(page, "messages-compose-refused");
    expect(csp).to.deep.equal([]);
  });
});
