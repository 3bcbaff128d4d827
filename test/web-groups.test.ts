// The dashboard's groups in a real browser against the sandbox engine (docs/groups.md): a
// connection's groups, a group's members and roles, creating a group with an outcome per
// participant, adding, promoting, demoting and removing members (removal asked first), each
// checked through the API; a developer may act too, a viewer reads only.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import type { Client, Member, TestWorkspace } from "./support/actors.js";
import { newWorkspace } from "./support/actors.js";
import { browserTestsRunnable, consoleErrors, expectNarrowAndAccessible, launchBrowser, pageWithSession, screenshot } from "./support/browser.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const webUrl = () => testEnv().gateway.ctx.config.webUrl;

describe("dashboard: groups", function () {
  this.timeout(120_000);
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const csp: string[][] = [];
  let ws: TestWorkspace;
  let client: Client;
  let slug: string;
  let linked: string;
  let developer: Member;
  let viewer: Member;
  let groupId: string;
  const [plain, invited, off, later] = [uniquePhone(), uniquePhone(), uniquePhone(), uniquePhone()];

  async function pageAs(cookie: string): Promise<Page> {
    const opened = await pageWithSession(browser, cookie);
    contexts.push(opened.context);
    csp.push(opened.csp);
    return opened.page;
  }

  /** The group's members as the API answers them: number → role. */
  async function roles(): Promise<Record<string, string>> {
    const group = await expectOk(client.groups.get({ params: { connection: slug, group: groupId } }));
    return Object.fromEntries(group.participants.map((p) => [p.phone ?? p.lid ?? "?", p.role]));
  }

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    browser = await launchBrowser();
    ws = await newWorkspace("pro");
    client = (await ws.key(["connections:read", "connections:write"])).client;
    slug = `groups-${randomBytes(3).toString("hex")}`;
    linked = uniquePhone("+1556");
    await pairConnection(client, slug, linked);
    developer = await ws.addMember("developer");
    viewer = await ws.addMember("viewer");
    await sandbox("POST", "/numbers", { phone: invited, group_add: "invite" });
    await sandbox("POST", "/numbers", { phone: off, on_network: false });
  });
  after(async () => {
    for (const ctx of contexts) await ctx.close();
    await browser?.close();
    expect(csp.flat()).to.deep.equal([]);
  });

  it("creates a group from the page and shows an outcome per participant", async () => {
    const page = await pageAs(ws.owner.cookie);
    const errors = consoleErrors(page);
    await page.goto(webUrl() + "/connections");
    await page.getByRole("link", { name: `Groups of ${slug}` }).click();
    await page.getByText("The number is in no group yet.").waitFor();
    // Refused before anything is sent: a subject of 101 characters (past the field's own maxlength, as a paste could be).
    await page.getByLabel("Subject").evaluate((el) => (el as unknown as { removeAttribute(name: string): void }).removeAttribute("maxlength"));
    await page.getByLabel("Subject").fill("x".repeat(101));
    await page.getByLabel("Members", { exact: true }).fill(plain);
    await page.getByRole("button", { name: "Create group" }).click();
    await page.getByRole("alert").filter({ hasText: "subject" }).waitFor();
    expect((await expectOk(client.groups.list({ params: { connection: slug } }))).data).to.deep.equal([]);

    await page.getByLabel("Subject").fill("Night shift");
    await page.getByLabel("Members", { exact: true }).fill(`${plain}\n${invited}, ${off}`);
    await page.getByRole("button", { name: "Create group" }).click();
    const outcomes = page.getByRole("status", { name: "Members of Night shift" });
    await outcomes.waitFor();
    expect(await outcomes.getByLabel(`${plain}: added`).count()).to.equal(1);
    expect(await outcomes.getByLabel(`${invited}: invited`).count()).to.equal(1);
    expect(await outcomes.getByLabel(`${off}: not_on_network`).count()).to.equal(1);
    const listed = await expectOk(client.groups.list({ params: { connection: slug } }));
    expect(listed.data.map((g) => [g.subject, g.own_role, g.size])).to.deep.equal([["Night shift", "superadmin", 2]]);
    groupId = listed.data[0]!.id;
    await page.getByRole("list", { name: "Groups" }).getByRole("link", { name: "Night shift" }).waitFor();
    await expectNarrowAndAccessible(page);
    await screenshot(page, "groups-create");
    expect(errors).to.deep.equal([]);
  });

  it("shows the members with their roles; promotes, demotes, adds and, once confirmed, removes", async () => {
    const page = await pageAs(ws.owner.cookie);
    await page.goto(webUrl() + `/groups/${slug}`);
    await page.getByRole("list", { name: "Groups" }).getByRole("link", { name: "Night shift" }).click();
    await page.getByRole("heading", { name: "Night shift" }).waitFor();
    const members = page.getByRole("list", { name: "Members" });
    await members.getByLabel(`Role of ${linked}: superadmin`).waitFor();
    await members.getByLabel(`Role of ${plain}: member`).waitFor();
    // Our own row (the group's creator) has no controls.
    expect(await page.getByRole("button", { name: `Remove ${linked}` }).count()).to.equal(0);

    await page.getByRole("button", { name: `Promote ${plain} to admin` }).click();
    await page.getByRole("status", { name: "Promoted: outcome per member" }).getByLabel(`${plain}: promoted`).waitFor();
    await members.getByLabel(`Role of ${plain}: admin`).waitFor();
    expect((await roles())[plain]).to.equal("admin");

    await page.getByRole("button", { name: `Demote ${plain} to member` }).click();
    await members.getByLabel(`Role of ${plain}: member`).waitFor();
    expect((await roles())[plain]).to.equal("member");

    await page.getByLabel("Phone numbers").fill(`${later}\n${plain}`);
    await page.getByRole("button", { name: "Add to group" }).click();
    const added = page.getByRole("status", { name: "Added: outcome per member" });
    await added.getByLabel(`${later}: added`).waitFor();
    await added.getByLabel(`${plain}: already_member`).waitFor();
    await members.getByLabel(`Role of ${later}: member`).waitFor();
    expect(await roles()).to.deep.equal({ [linked]: "superadmin", [plain]: "member", [later]: "member" });

    const dialog = page.getByRole("alertdialog", { name: `Remove ${later} from Night shift?` });
    await page.getByRole("button", { name: `Remove ${later}` }).click();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    expect(Object.keys(await roles())).to.include(later);
    await page.getByRole("button", { name: `Remove ${later}` }).click();
    await dialog.getByRole("button", { name: "Remove from group" }).click();
    await page.getByRole("status", { name: "Removed: outcome per member" }).getByLabel(`${later}: removed`).waitFor();
    await members.getByLabel(`Role of ${later}: member`).waitFor({ state: "detached" });
    expect(Object.keys(await roles())).not.to.include(later);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "group-members");
  });

  it("lets a developer manage members too", async () => {
    const page = await pageAs(developer.cookie);
    await page.goto(webUrl() + `/groups/${slug}/${encodeURIComponent(groupId)}`);
    await page.getByRole("button", { name: `Promote ${plain} to admin` }).click();
    await page.getByRole("list", { name: "Members" }).getByLabel(`Role of ${plain}: admin`).waitFor();
    expect((await roles())[plain]).to.equal("admin");
  });

  it("says where the linked number is no admin of a group, and offers no member controls there", async () => {
    const made = await sandbox("POST", "/groups", { phone: linked, role: "member", subject: "Neighbours", members: [{ phone: uniquePhone() }] });
    expect(made.status).to.equal(201);
    const id = made.json.id as string;
    await waitFor(() => expectOk(client.groups.list({ params: { connection: slug } })), (l) => l.data.some((g) => g.id === id));
    const page = await pageAs(ws.owner.cookie);
    await page.goto(webUrl() + `/groups/${slug}/${encodeURIComponent(id)}`);
    await page.getByText("The linked number is not an admin of this group").waitFor();
    expect(await page.getByRole("button", { name: /^(Promote|Demote|Remove) / }).count()).to.equal(0);
    expect(await page.getByRole("button", { name: "Add to group" }).count()).to.equal(0);
  });

  it("lets a viewer see the groups and members but not create or change them (the API refuses them too)", async () => {
    const page = await pageAs(viewer.cookie);
    await page.goto(webUrl() + `/groups/${slug}`);
    await page.getByRole("list", { name: "Groups" }).getByRole("link", { name: "Night shift" }).click();
    await page.getByRole("list", { name: "Members" }).getByLabel(`Role of ${plain}: admin`).waitFor();
    await page.getByText("Your role (viewer) reads groups").waitFor();
    expect(await page.getByRole("button", { name: /^(Promote|Demote|Remove) / }).count()).to.equal(0);
    expect(await page.getByRole("button", { name: "Add to group" }).count()).to.equal(0);
    await page.getByRole("link", { name: `All groups of ${slug}` }).click();
    await page.getByRole("list", { name: "Groups" }).waitFor();
    expect(await page.getByRole("button", { name: "Create group" }).count()).to.equal(0);
    await expectNarrowAndAccessible(page);
    const refused = await viewer.client.groups.participants({ params: { connection: slug, group: groupId }, body: { action: "remove", participants: [plain] } });
    expect(refused.status).to.equal(403);
    expect((await viewer.client.groups.create({ params: { connection: slug }, body: { subject: "Nope", participants: [plain] } })).status).to.equal(403);
    expect((await roles())[plain]).to.equal("admin");
  });

  it("adds up to 256 numbers at once: 257 are refused on the page before anything is sent", async () => {
    const made = await expectOk(client.groups.create({ params: { connection: slug }, body: { subject: "Everyone", participants: [plain] } }));
    const page = await pageAs(ws.owner.cookie);
    await page.goto(webUrl() + `/groups/${slug}/${encodeURIComponent(made.id)}`);
    const numbers = Array.from({ length: 257 }, () => uniquePhone());
    await page.getByLabel("Phone numbers").fill(numbers.join("\n"));
    await page.getByRole("button", { name: "Add to group" }).click();
    await page.getByRole("alert").filter({ hasText: "participants" }).waitFor();
    expect((await expectOk(client.groups.get({ params: { connection: slug, group: made.id } }))).size).to.equal(2);

    await page.getByLabel("Phone numbers").fill(numbers.slice(0, 256).join("\n"));
    await page.getByRole("button", { name: "Add to group" }).click();
    const outcomes = page.getByRole("status", { name: "Added: outcome per member" });
    await outcomes.getByLabel(`${numbers[255]}: added`).waitFor();
    expect(await outcomes.getByText("added", { exact: true }).count()).to.equal(256);
    expect((await expectOk(client.groups.get({ params: { connection: slug, group: made.id } }))).size).to.equal(258);
  });
});
