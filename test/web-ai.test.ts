// The dashboard's AI pages in a real browser against the test gateway: credentials (the key never
// shown after submit), a connection's policy at its limits and one past them, turning AI off, the
// read-only view of a viewer, the plan message off-plan, and the runs as the API answers them.
import { expect } from "chai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { MAX_SAFE_INT } from "../contract/common.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Member, type TestWorkspace } from "./support/actors.js";
import { aiConnection, insertRuns, uniquePhone } from "./support/ai.js";
import { waitFor } from "./support/wait.js";
import { DEFAULT_VENDOR_TEXT, startVendorOne } from "./support/vendors.js";
import { browserTestsRunnable, consoleErrors, expectNarrowAndAccessible, launchBrowser, pageWithSession, screenshot } from "./support/browser.js";

const API_KEY = "sk-test-0123456789abcdefXyZ9";
const count = (n: number) => n.toLocaleString("en-US");

/** The page's globals, as far as these tests read them (the test program has no DOM types). */
type PageGlobals = { localStorage: { length: number }; sessionStorage: { length: number } };

describe("dashboard: AI pages", function () {
  this.timeout(60_000);
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const csp: string[][] = [];

  /** A 360 px page signed in as `member` (its session cookie, obtained by signing in with the mailed code). */
  async function pageAs(member: Member): Promise<Page> {
    const opened = await pageWithSession(browser, member.cookie);
    contexts.push(opened.context);
    csp.push(opened.csp);
    return opened.page;
  }

  async function openAi(page: Page, path = "/ai"): Promise<void> {
    await page.goto(testEnv().gateway.ctx.config.webUrl + path);
    await page.getByRole("heading", { name: "AI assistance" }).waitFor();
  }

  /** Opens one of the AI sections by its link and waits for its heading. */
  async function section(page: Page, name: "Credentials" | "Policies" | "Runs"): Promise<void> {
    await page.getByRole("navigation", { name: "AI sections" }).getByRole("link", { name, exact: true }).click();
    await page.getByRole("heading", { name, exact: true }).waitFor();
  }

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    browser = await launchBrowser();
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    expect(csp.flat()).to.deep.equal([]);
  });

  describe("as an owner on a plan with AI", () => {
    let ws: TestWorkspace;
    let page: Page;
    let credentialId = "";

    before(async function () {
      if (!browser) return this.skip();
      ws = await newWorkspace("pro");
      await expectOk(ws.owner.client.connections.create({ body: { slug: "ai-desk" } }));
      page = await pageAs(ws.owner);
    });

    it("adds a credential: a refused private base URL shows the API's detail, the key is never shown after submit, the fingerprint is", async () => {
      await openAi(page);
      await page.getByText("No credentials yet.").waitFor();
      await page.getByLabel("Label").fill("main");
      await page.getByLabel("API key").fill(API_KEY);
      await page.getByLabel("Base URL (optional)").fill("http://10.1.2.3/v1");
      await page.getByRole("button", { name: "Add credential" }).click();
      const alert = page.getByRole("alert").filter({ hasText: "base_url" });
      await alert.waitFor();
      expect(await alert.textContent()).to.match(/Request ID: \S+/);
      // The field's error once (the detail of a validation problem is its list, joined).
      expect((await alert.textContent())!.split("base_url:").length - 1).to.equal(1);
      // Refused or not, the key field is empty after submit, and its help says so.
      expect(await page.getByLabel("API key").inputValue()).to.equal("");
      expect(await page.locator("#cred-key-help").textContent()).to.include("emptied after each submit");

      // Submitted again without the key: the form's own refusal, and the API's old one is gone.
      await page.getByLabel("Base URL (optional)").fill("");
      await page.getByRole("button", { name: "Add credential" }).click();
      await page.getByRole("alert").filter({ hasText: "api_key" }).waitFor();
      expect(await page.getByRole("alert").filter({ hasText: "base_url" }).count()).to.equal(0);

      await page.getByLabel("API key").fill(API_KEY);
      await page.getByRole("button", { name: "Add credential" }).click();
      await page.getByLabel("Fingerprint of main").waitFor();
      expect(await page.getByLabel("Fingerprint of main").textContent()).to.equal("…XyZ9");
      expect(await page.getByLabel("API key").inputValue()).to.equal("");
      expect(await page.content()).to.not.include(API_KEY.slice(0, 12));
      expect(await page.evaluate(() => {
        const g = globalThis as unknown as PageGlobals;
        return [g.localStorage.length, g.sessionStorage.length];
      })).to.deep.equal([0, 0]);
      const listed = await expectOk(ws.owner.client.ai.listCredentials());
      expect(listed.data.map((c) => [c.label, c.fingerprint, c.base_url])).to.deep.equal([["main", "…XyZ9", null]]);
      credentialId = listed.data[0]!.id;
      await expectNarrowAndAccessible(page);
      await screenshot(page, "ai-credentials");
    });

    it("sets a policy at its limits, marks the first value past one, shows the API's refusal at its field, and turns AI off", async () => {
      await section(page, "Policies");
      await page.getByText("AI is off for this connection: it has no policy.").waitFor();
      // The limits and defaults come from the contract's schema.
      expect(await page.getByLabel("Max output tokens").inputValue()).to.equal("300");
      await page.getByText("32 to 2,000; default 300").waitFor();
      // Nothing chosen yet: the form says so at the fields, and sends nothing.
      await page.getByRole("button", { name: "Save policy" }).click();
      await page.locator("#pol-credential_id-error").filter({ hasText: "Credential: choose one" }).waitFor();
      await page.locator("#pol-model-error").waitFor();
      expect((await http("GET", "/v1/ai/policies/ai-desk", { headers: { cookie: ws.owner.cookie } })).status).to.equal(404);
      await page.getByLabel("Credential", { exact: true }).selectOption(credentialId);
      await page.getByLabel("Mode", { exact: true }).selectOption("auto");
      await page.getByLabel("Model", { exact: true }).fill("m".repeat(120));
      await page.getByLabel("System instruction").fill("Answer briefly.");
      await page.getByLabel("Max output tokens").fill("2000");
      await page.getByLabel("Max context (bytes)").fill("256");
      await page.getByLabel("Monthly cost limit").fill("0");
      await page.getByRole("button", { name: "Save policy" }).click();
      await page.getByText("AI is on for this connection (auto mode)").waitFor();
      const saved = await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }));
      expect(saved).to.deep.include({ credential_id: credentialId, enabled: true, mode: "auto", max_output_tokens: 2000, max_context_bytes: 256, monthly_cost_limit_micros: 0 });

      // One past the limit: the field says why, and nothing is saved.
      await page.getByLabel("Max output tokens").fill("2001");
      await page.getByRole("button", { name: "Save policy" }).click();
      const fieldError = page.locator("#pol-max_output_tokens-error");
      await fieldError.waitFor();
      expect(await fieldError.textContent()).to.equal("Max output tokens: Number must be less than or equal to 2000");
      expect(await page.getByLabel("Max output tokens").getAttribute("aria-invalid")).to.equal("true");
      await expectNarrowAndAccessible(page);
      await screenshot(page, "ai-policy");
      await page.getByLabel("Max output tokens").fill("2000");

      // What only the API knows: a credential deleted meanwhile. Its problem shows at the field, with detail and request id.
      const spare = await expectOk(ws.owner.client.ai.createCredential({ body: { provider: "vendortwo", label: "spare", api_key: API_KEY } }));
      await section(page, "Credentials");
      await page.getByLabel("Fingerprint of spare").waitFor();
      await section(page, "Policies");
      await page.getByLabel("Credential", { exact: true }).selectOption(spare.id);
      await page.getByLabel("Model", { exact: true }).fill("model-b");
      await expectOk(ws.owner.client.ai.deleteCredential({ params: { id: spare.id } }));
      await page.getByRole("button", { name: "Save policy" }).click();
      await page.locator("#pol-credential_id-error").filter({ hasText: "no such AI credential in this workspace" }).waitFor();
      const problem = page.getByRole("alert").filter({ hasText: "Request ID" });
      expect(await problem.textContent()).to.include("credential_id");
      expect((await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }))).model).to.equal("m".repeat(120));

      // Turn off: the saved policy, enabled=false.
      await page.getByRole("button", { name: "Turn AI off" }).click();
      await page.getByText("AI is off for this connection: its policy is saved turned off").waitFor();
      const off = await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }));
      expect(off).to.deep.include({ enabled: false, credential_id: credentialId, model: "m".repeat(120), max_output_tokens: 2000 });
      await expectNarrowAndAccessible(page);
    });

    it("shows prices and the monthly limit in currency units, converting exactly both ways at the limits", async () => {
      // From the API to the page: one micro and the largest amount.
      const base = { credential_id: credentialId, enabled: true, mode: "draft", model: "m", system_instruction: "s" } as const;
      await expectOk(
        ws.owner.client.ai.setPolicy({
          params: { connection: "ai-desk" },
          body: { ...base, input_cost_micros_per_million: 1, output_cost_micros_per_million: MAX_SAFE_INT, monthly_cost_limit_micros: 2_500_000 },
        }),
      );
      const errors = consoleErrors(page);
      await page.reload();
      await page.getByText("AI is on for this connection (draft mode)").waitFor();
      const field = (label: string) => page.getByLabel(label, { exact: true });
      expect(await field("Input price per million tokens").inputValue()).to.equal("0.000001");
      expect(await field("Output price per million tokens").inputValue()).to.equal("9007199254.740991");
      expect(await field("Monthly cost limit").inputValue()).to.equal("2.5");
      await page.locator("#pol-output_cost_micros_per_million-help").filter({ hasText: "0 to 9,007,199,254.740991; default 0" }).waitFor();

      // From the page to the API: the largest amount (with separators), an amount with decimals.
      await field("Monthly cost limit").fill("9,007,199,254.740991");
      await field("Input price per million tokens").fill("1,234.5");
      await page.getByRole("button", { name: "Save policy" }).click();
      await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
      const saved = await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }));
      expect(saved).to.include({ monthly_cost_limit_micros: MAX_SAFE_INT, input_cost_micros_per_million: 1_234_500_000, output_cost_micros_per_million: MAX_SAFE_INT });
      expect(await field("Input price per million tokens").inputValue()).to.equal("1234.5");

      // One micro past the largest amount, and a seventh decimal: refused at the field, nothing saved.
      const fieldError = page.locator("#pol-monthly_cost_limit_micros-error");
      for (const [typed, why] of [["9007199254.740992", "At most 9,007,199,254.740991"], ["0.0000001", "At most six decimals"]] as const) {
        await field("Monthly cost limit").fill(typed);
        await page.getByRole("button", { name: "Save policy" }).click();
        await fieldError.filter({ hasText: why }).waitFor();
        expect(await field("Monthly cost limit").getAttribute("aria-invalid")).to.equal("true");
      }
      expect((await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }))).updated_at).to.equal(saved.updated_at);
      // The lowest: 0 refuses every run; empty is no limit.
      await field("Monthly cost limit").fill("0");
      await page.getByRole("button", { name: "Save policy" }).click();
      await waitFor(async () => (await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }))).monthly_cost_limit_micros, (v) => v === 0);
      await field("Monthly cost limit").fill("");
      await page.getByRole("button", { name: "Save policy" }).click();
      await waitFor(async () => (await expectOk(ws.owner.client.ai.getPolicy({ params: { connection: "ai-desk" } }))).monthly_cost_limit_micros, (v) => v === null);
      await expectNarrowAndAccessible(page);
      await screenshot(page, "ai-policy-currency");
      // A connection's policy is read from the list: no 404 asked for, none logged.
      expect(errors).to.deep.equal([]);
    });

    it("deletes a credential after confirmation", async () => {
      await section(page, "Credentials");
      await page.getByRole("button", { name: "Delete main" }).click();
      await page.getByRole("alertdialog", { name: "Delete the credential main?" }).getByRole("button", { name: "Delete credential" }).click();
      await page.getByText("No credentials yet.").waitFor();
      expect((await expectOk(ws.owner.client.ai.listCredentials())).data).to.deep.equal([]);
    });

    it("shows an empty runs list as such", async () => {
      expect((await http("GET", "/v1/ai/runs?limit=25", { headers: { cookie: ws.owner.cookie } })).json.data).to.deep.equal([]);
      await section(page, "Runs");
      await page.getByText("No runs yet.").waitFor();
      expect(await page.getByRole("region", { name: "AI runs" }).count()).to.equal(0);
      await expectNarrowAndAccessible(page);
      await screenshot(page, "ai-runs-empty");
    });

    it("says so when the plan no longer includes AI and a change is refused with 402", async () => {
      await openAi(page);
      await page.getByLabel("Label").fill("late");
      await page.getByLabel("API key").fill(API_KEY);
      await testEnv().gateway.ctx.services.workspaces.setPlan(ws.id, "free");
      try {
        await page.getByRole("button", { name: "Add credential" }).click();
        // The page stops offering forms, and keeps the refusal as the API gave it.
        await page.getByText("The Free plan does not include AI assistance, so this workspace cannot").waitFor();
        const refusal = (await page.getByRole("alert").textContent())!;
        expect(refusal).to.match(/Your plan \(Free\) does not include AI assistance; the Pro plan does\./).and.match(/Request ID: \S+/);
        expect(await page.getByRole("button", { name: "Add credential" }).count()).to.equal(0);
        await expectNarrowAndAccessible(page);
      } finally {
        await testEnv().gateway.ctx.services.workspaces.setPlan(ws.id, "pro");
      }
    });
  });

  it("shows a run in the table: an inbound message answered through a loopback vendor, filtered by connection", async function () {
    if (!browser) return this.skip();
    const vendor = await startVendorOne();
    try {
      const t = await aiConnection(vendor, "vendorone_compatible", { input_cost_micros_per_million: 1_000_000, output_cost_micros_per_million: 2_000_000 });
      await t.inbound(uniquePhone("+1551"), "Do you open on Sundays?");
      const [run] = await t.waitRuns(1);
      expect(run!.outcome).to.equal("replied");
      const page = await pageAs(t.ws.owner);
      await openAi(page, "/ai/runs");
      const table = page.getByRole("region", { name: "AI runs" });
      const row = table.getByRole("row").filter({ hasText: run!.prompt_sha256!.slice(0, 12) });
      await row.waitFor();
      const cells = await row.getByRole("cell").allTextContents();
      expect(cells.slice(1)).to.deep.equal([
        t.slug,
        "auto",
        "test-model",
        "replied",
        "—",
        `${count(run!.input_tokens)} / ${count(run!.output_tokens)}`,
        // Micros as currency units: the vendor's prices here are 1 and 2 units per million tokens.
        String(run!.cost_micros / 1_000_000),
        `${count(run!.latency_ms!)} ms`,
        `${run!.prompt_sha256!.slice(0, 12)}…`,
      ]);
      // Never a prompt or a reply: neither the contact's text nor the vendor's answer is on the page.
      expect(await page.content()).to.not.include("Sundays").and.not.include(DEFAULT_VENDOR_TEXT);
      // Another connection of the workspace has no runs; its filter shows none, then back.
      await expectOk(t.client.connections.create({ body: { slug: "quiet-line" } }));
      await page.reload();
      await page.getByLabel("Connection").selectOption("quiet-line");
      await page.getByText("No runs on quiet-line yet.").waitFor();
      await page.getByLabel("Connection").selectOption(t.slug);
      await row.waitFor();
      await expectNarrowAndAccessible(page);
      await screenshot(page, "ai-runs");
    } finally {
      await vendor.close();
    }
  });

  it("pages through runs 25 at a time with the API's cursor, and back", async function () {
    if (!browser) return this.skip();
    const ws = await newWorkspace("pro");
    const connection = await expectOk(ws.owner.client.connections.create({ body: { slug: "busy-line" } }));
    await insertRuns({ ws, connectionId: connection.id }, 26);
    const page = await pageAs(ws.owner);
    await openAi(page, "/ai/runs");
    const rows = page.getByRole("region", { name: "AI runs" }).locator("tbody tr");
    const next = page.getByRole("button", { name: "Next page" });
    const previous = page.getByRole("button", { name: "Previous page" });
    await waitFor(() => rows.count(), (n) => n === 25);
    expect(await previous.isDisabled()).to.equal(true);
    await next.click();
    // The 26th, oldest run alone on the second page, and nothing after it.
    await waitFor(() => rows.count(), (n) => n === 1);
    expect(await next.isDisabled()).to.equal(true);
    await previous.click();
    await waitFor(() => rows.count(), (n) => n === 25);
    expect(await previous.isDisabled()).to.equal(true);
    await expectNarrowAndAccessible(page);
  });

  it("shows a viewer the credentials and the policy read-only", async function () {
    if (!browser) return this.skip();
    const ws = await newWorkspace("pro");
    await expectOk(ws.owner.client.connections.create({ body: { slug: "ai-read" } }));
    const credential = await expectOk(ws.owner.client.ai.createCredential({ body: { provider: "vendortwo", label: "shared", api_key: API_KEY } }));
    await expectOk(
      ws.owner.client.ai.setPolicy({ params: { connection: "ai-read" }, body: { credential_id: credential.id, enabled: true, mode: "draft", model: "claude-x", system_instruction: "Be kind." } }),
    );
    const viewer = await ws.addMember("viewer");
    const page = await pageAs(viewer);
    await openAi(page);
    await page.getByText("Your role (viewer) can read the AI settings").waitFor();
    await page.getByLabel("Fingerprint of shared").waitFor();
    expect(await page.getByRole("button", { name: "Add credential" }).count()).to.equal(0);
    expect(await page.getByRole("button", { name: "Delete shared" }).count()).to.equal(0);
    await expectNarrowAndAccessible(page);
    await section(page, "Policies");
    await page.getByText("AI is on for this connection (draft mode)").waitFor();
    expect(await page.getByLabel("Model", { exact: true }).inputValue()).to.equal("claude-x");
    expect(await page.getByLabel("Model", { exact: true }).isDisabled()).to.equal(true);
    expect(await page.getByLabel("Max output tokens").isDisabled()).to.equal(true);
    expect(await page.getByRole("button", { name: "Save policy" }).count()).to.equal(0);
    expect(await page.getByRole("button", { name: "Turn AI off" }).count()).to.equal(0);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "ai-policy-viewer");
  });

  it("tells a workspace whose plan lacks AI so, instead of showing forms", async function () {
    if (!browser) return this.skip();
    const ws = await newWorkspace("free");
    const page = await pageAs(ws.owner);
    await openAi(page);
    await page.getByText("The Free plan does not include AI assistance").waitFor();
    expect(await page.getByRole("button", { name: "Add credential" }).count()).to.equal(0);
    expect(await page.getByRole("navigation", { name: "AI sections" }).count()).to.equal(0);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "ai-off-plan");
  });
});
