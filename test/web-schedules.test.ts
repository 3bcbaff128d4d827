// The schedules page in a real browser: signed in with the mailed code, a schedule in New York
// created from the form whose live preview shows exactly the five runs the API's preview answers
// (across the March change, so the offset moves while 09:00 stays), an invalid zone's problem
// shown with its request id, then pause, resume and cancel with buttons that follow the status.
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import type { PreviewScheduleBody, SchedulePreview } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { clientAddress, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { browserTestsRunnable, cspViolations, expectAccessible, narrowContext, openNarrowPage, screenshot } from "./support/browser.js";

describe("dashboard: schedules", function () {
  this.timeout(60_000);
  let browser: Browser;
  let page: Page;
  let csp: string[];
  let ws: TestWorkspace;
  const slug = `morning-${randomBytes(3).toString("hex")}`;
  const name = "Morning report";
  // 00:00 on 8 March 2030 in New York: the five runs cross the change to daylight time on the 10th.
  const timing = { timezone: "America/New_York", recurrence: { type: "daily", hour: 9, minute: 0 }, starts_at: "2030-03-08T00:00:00-05:00" };

  const api = (path: string) => testEnv().gateway.ctx.config.webUrl + path;

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    ws = await newWorkspace("pro");
    // The schedule sends through a connection; one made over the API with another session of the owner.
    await expectOk(ws.owner.client.connections.create({ body: { slug } }));
    ({ browser, page, csp } = await openNarrowPage(clientAddress()));
  });
  after(async () => {
    await browser?.close();
  });

  it("signs in and opens the schedules page", async () => {
    const { mailbox, gateway } = testEnv();
    await page.goto(gateway.ctx.config.webUrl + "/");
    const since = mailbox.mails.length;
    const email = ws.owner.email;
    await page.getByLabel("E-mail address").fill(email);
    await page.getByLabel("E-mail address").press("Enter");
    await page.getByLabel("Sign-in code").waitFor();
    const [, code] = await mailbox.waitFor(email, /sign-in code is (\d{6})/, since);
    await page.getByLabel("Sign-in code").fill(code!);
    await page.getByLabel("Sign-in code").press("Enter");
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByRole("link", { name: "Schedules" }).click();
    await page.getByRole("heading", { name: "Schedules", exact: true }).waitFor();
    await page.getByText("No schedules match.").waitFor();
  });

  it("previews the same five runs as the API, in the schedule's zone, and shows an unknown zone's problem", async () => {
    await page.getByLabel("Name", { exact: true }).fill(name);
    expect(await page.getByLabel("Connection").inputValue()).to.equal(slug);
    await page.getByLabel("To (phone number)").fill("+15550001111");
    await page.getByLabel("Message").fill("Good morning");
    await page.getByLabel("Time zone").fill("Mars/Phobos");
    const preview = page.getByRole("region", { name: "Next five runs" });
    const problem = preview.getByRole("alert");
    await problem.waitFor();
    expect(await problem.textContent()).to.include("body.timezone").and.match(/Request ID: req_\w+/);

    await page.getByLabel("Time zone").fill(timing.timezone);
    await page.getByLabel("Repeats").selectOption("daily");
    await page.getByLabel("At (time of day)").fill("09:00");
    await page.getByLabel("Starts (optional)").fill("2030-03-08T00:00");
    // The API's own answer for the same fields, asked with the page's session.
    const res = await page.request.post(api("/v1/schedules/preview"), { data: timing });
    expect(res.status()).to.equal(200);
    const { runs } = (await res.json()) as SchedulePreview;
    expect(runs).to.have.lengthOf(5);
    expect(runs[2]!.local).to.equal("2030-03-10T09:00:00-04:00");

    const items = preview.getByRole("list", { name: "Next runs" }).getByRole("listitem");
    await preview.locator(`time[datetime="${runs[0]!.at}"]`).waitFor();
    expect(await items.count()).to.equal(5);
    const shown = await items.locator("time").evaluateAll((els) => els.map((e) => [e.getAttribute("datetime"), e.textContent]));
    expect(shown.map(([at]) => at)).to.deep.equal(runs.map((r) => r.at));
    shown.forEach(([, text], i) => {
      const local = runs[i]!.local;
      // Date and wall time as the zone reads them, with that day's offset.
      expect(text).to.include(`${local.slice(0, 10)} ${local.slice(11, 16)} (UTC${local.slice(19)})`);
    });
    expect(shown[1]![1]).to.include("(UTC-05:00)");
    expect(shown[2]![1]).to.include("(UTC-04:00)");
    await expectAccessible(page);
  });

  it("creates the schedule, shows its next run in its zone, and pauses, resumes and cancels it", async () => {
    const { runs } = (await (await page.request.post(api("/v1/schedules/preview"), { data: timing })).json()) as SchedulePreview;
    await page.getByRole("button", { name: "Create schedule" }).click();
    const status = page.getByLabel(`Status of ${name}`);
    await status.waitFor();
    expect(await status.textContent()).to.equal("active");
    const next = page.getByLabel(`Next run of ${name}`);
    expect(await next.getAttribute("datetime")).to.equal(runs[0]!.at);
    expect(await next.textContent()).to.include("2030-03-08 09:00 (UTC-05:00)");
    // The form is empty again for the next one.
    expect(await page.getByLabel("Name", { exact: true }).inputValue()).to.equal("");
    await expectAccessible(page);
    await screenshot(page, "schedules");

    const button = (verb: string) => page.getByRole("button", { name: `${verb} ${name}` });
    expect(await button("Resume").count()).to.equal(0);
    await button("Pause").click();
    await page.getByLabel(`Status of ${name}`).getByText("paused").waitFor();
    expect(await button("Pause").count()).to.equal(0);
    await button("Resume").click();
    await page.getByLabel(`Status of ${name}`).getByText("active").waitFor();
    expect(await button("Resume").count()).to.equal(0);
    await button("Cancel").click();
    await page.getByRole("alertdialog", { name: `Cancel ${name} for good?` }).getByRole("button", { name: "Cancel schedule" }).click();
    await page.getByLabel(`Status of ${name}`).getByText("canceled").waitFor();
    for (const verb of ["Pause", "Resume", "Cancel"]) expect(await button(verb).count(), verb).to.equal(0);
    expect(await page.getByLabel(`Next run of ${name}`).count()).to.equal(0);

    // The API agrees with what the page shows.
    const listed = await page.request.get(api("/v1/schedules"));
    const [schedule] = ((await listed.json()) as { data: { name: string; status: string }[] }).data;
    expect(schedule).to.include({ name, status: "canceled" });
    // The status filter: nothing is active any more.
    await page.getByLabel("Status", { exact: true }).selectOption("active");
    await page.getByText("No schedules match.").waitFor();
    expect(csp).to.deep.equal([]);
  });

  it("shows a viewer the schedules and their next runs in their zones, with no form and no buttons", async () => {
    const timing: PreviewScheduleBody = { timezone: "Asia/Kathmandu", recurrence: { type: "weekly", hour: 8, minute: 15, days_of_week: [1, 5] }, starts_at: "2030-01-01T00:00:00Z" };
    const created = await expectOk(
      ws.owner.client.schedules.create({ body: { name: "Weekly digest", ...timing, message: { connection: slug, to: "+15550001111", body: "digest" } } }),
    );
    const viewer = await ws.addMember("viewer");
    const viewerContext = await narrowContext(browser, clientAddress());
    const at = viewer.cookie.indexOf("=");
    await viewerContext.addCookies([{ name: viewer.cookie.slice(0, at), value: viewer.cookie.slice(at + 1), url: api("/") }]);
    const viewerPage = await viewerContext.newPage();
    const violations = cspViolations(viewerPage);
    await viewerPage.goto(api("/schedules"));
    await viewerPage.getByRole("heading", { name: "Schedules", exact: true }).waitFor();
    const next = viewerPage.getByLabel("Next run of Weekly digest");
    await next.waitFor();
    expect(await next.getAttribute("datetime")).to.equal(created.next_run_at);
    // 2030-01-01 is a Tuesday: the first run is Friday the 4th, 08:15 in Kathmandu.
    expect(await next.textContent()).to.equal("Fri 2030-01-04 08:15 (UTC+05:45)");
    expect(await viewerPage.getByText("weekly on Mon, Fri at 08:15 in Asia/Kathmandu").count()).to.equal(1);
    expect(await viewerPage.getByRole("heading", { name: "New schedule" }).count()).to.equal(0);
    expect(await viewerPage.getByRole("button", { name: /^(Pause|Resume|Cancel) / }).count()).to.equal(0);
    await expectAccessible(viewerPage);
    expect(violations).to.deep.equal([]);
    await viewerContext.close();
  });
});
