// A real browser for the dashboard's tests: Debian's Chromium driven by playwright-core, at the
// narrowest width the dashboard supports, with axe checks and a screenshot of each page.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";
import { expect } from "chai";
import { testEnv } from "../setup.js";
import { clientAddress } from "./actors.js";

/** Screenshots land here (git-ignored; CI keeps it as an artifact). */
export const ARTIFACTS_DIR = join(process.cwd(), "test-artifacts");

const INSTALL = "`apt-get install -y chromium` (see .ci/run)";

function findChromium(): string | null {
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

/**
 * Whether the browser tests can run. Outside CI a machine without Chromium skips them with a note
 * (the README's `npm test` works anywhere); in CI (CI set) its absence fails them.
 */
export function browserTestsRunnable(): boolean {
  if (findChromium() || process.env.CI) return true;
  console.warn(`    (the dashboard's browser tests are skipped: Chromium is not installed; ${INSTALL})`);
  return false;
}

function chromiumPath(): string {
  const path = findChromium();
  if (!path) throw new Error(`Chromium is not installed: ${INSTALL}`);
  return path;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/** A fresh profile 360 px wide; every request claims its own client address (per-IP sign-in limits). */
export async function narrowContext(browser: Browser, clientAddress: string): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 360, height: 740 }, extraHTTPHeaders: { "x-forwarded-for": clientAddress } });
}

/** Fails on any serious or critical axe violation of the page as it is now. */
export async function expectAccessible(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).to.deep.equal([]);
}

/** Usable at 360 px: axe clean and nothing wider than the window (a wide table scrolls inside its own region). */
export async function expectNarrowAndAccessible(page: Page): Promise<void> {
  const [scroll, client] = await page.evaluate(() => {
    const { documentElement: d } = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document;
    return [d.scrollWidth, d.clientWidth];
  });
  expect(scroll, "page width at 360 px").to.be.at.most(client);
  await expectAccessible(page);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS_DIR, `${name}.png`), fullPage: true });
}

/** Collects what the page's console says about Content-Security-Policy violations. */
export function cspViolations(page: Page): string[] {
  const seen: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) seen.push(m.text());
  });
  return seen;
}

/** A browser with one page in a narrow context (as a client at `clientAddress`), and the CSP violations that page reports. */
export async function openNarrowPage(clientAddress: string): Promise<{ browser: Browser; context: BrowserContext; page: Page; csp: string[] }> {
  const browser = await launchBrowser();
  const context = await narrowContext(browser, clientAddress);
  const page = await context.newPage();
  return { browser, context, page, csp: cspViolations(page) };
}

/** A 360 px page in a fresh context already signed in with `cookie` (`svc_session=…`), and the CSP violations it reports. */
export async function pageWithSession(browser: Browser, cookie: string): Promise<{ context: BrowserContext; page: Page; csp: string[] }> {
  const context = await narrowContext(browser, clientAddress());
  const [name, value] = cookie.split("=") as [string, string];
  await context.addCookies([{ name, value, url: testEnv().gateway.ctx.config.webUrl, httpOnly: true, sameSite: "Lax" }]);
  const page = await context.newPage();
  return { context, page, csp: cspViolations(page) };
}

/** Everything the page logs as an error (failed loads included: the browser logs a 401 or 404 answer so) and every uncaught exception. */
export function consoleErrors(page: Page): string[] {
  const seen: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") seen.push(`${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => seen.push(`uncaught: ${e.message}`));
  return seen;
}
