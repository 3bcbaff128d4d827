// The dashboard's chat view in a real browser against the sandbox engine (docs/conversations.md):
// a connection's chats with unread counts, a chat's messages in order with the quoted message, reactions, edited and deleted marks, media opened through the media route and
// poll tallies, live over the event stream (a new message, a contact typing); answering through
// the page (send, reply quoting, react, mark read), each checked through the API and what the
// network received; a viewer reads and cannot act.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { inboundFrom, linkedConnection, receivedBy, uniquePhone, waitForMessage, type Linked } from "./support/conversations.js";
import { browserTestsRunnable, consoleErrors, expectNarrowAndAccessible, launchBrowser, pageWithSession, screenshot } from "./support/browser.js";
import { sandbox } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";
import type { Member } from "./support/actors.js";

const webUrl = () => testEnv().gateway.ctx.config.webUrl;
const PHOTO = Buffer.from("not really a jpeg, but bytes all the same");

describe("dashboard: chats", function () {
  this.timeout(120_000);
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const csp: string[][] = [];
  let c: Linked;
  let media: Server;
  let contact: string;
  let question: string;
  let photo: string;
  let viewer: Member;

  async function pageAs(cookie: string): Promise<Page> {
    const opened = await pageWithSession(browser, cookie);
    contexts.push(opened.context);
    csp.push(opened.csp);
    return opened.page;
  }

  /** The chat's messages as the API lists them, oldest first. */
  async function chatMessages() {
    const page = await expectOk(c.client.messages.list({ query: { connection: c.slug, chat: contact, limit: 100 } }));
    return page.data.slice().reverse();
  }

  before(async function () {
    if (!browserTestsRunnable()) return this.skip();
    browser = await launchBrowser();
    c = await linkedConnection();
    viewer = await c.ws.addMember("viewer");
    // The network keeps a contact's photo at a URL (the sandbox's media), fetched when the page opens it.
    media = createServer((_req, res) => void res.writeHead(200, { "content-type": "image/jpeg", "content-length": String(PHOTO.length) }).end(PHOTO));
    await new Promise<void>((r) => media.listen(0, "127.0.0.1", r));
    const mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/photo.jpg`;

    contact = uniquePhone();
    const first = await inboundFrom(c, contact, { body: "Where is my order?" });
    photo = (await inboundFrom(c, contact, { media: { url: mediaUrl, kind: "image", mimetype: "image/jpeg", filename: "receipt.jpg" } })).id;
    const typo = await inboundFrom(c, contact, { body: "It is order 1234" });
    expect((await sandbox("POST", "/edit", { from: contact, to: c.phone, message_id: typo.id, body: "It is order 1235" })).status).to.equal(202);
    const oops = await inboundFrom(c, contact, { body: "wrong chat, sorry" });
    expect((await sandbox("POST", "/revoke", { from: contact, to: c.phone, message_id: oops.id })).status).to.equal(202);
    // Our poll, voted on by the contact.
    question = "Pickup or delivery?";
    const poll = await expectOk(c.client.conversations.poll({ body: { connection: c.slug, to: contact, question, options: ["Pickup", "Delivery"] } }));
    await waitForMessage(c, poll.id, (m) => m.provider_message_id !== null);
    expect((await sandbox("POST", "/vote", { from: contact, to: c.phone, message_id: poll.id, options: ["Delivery"] })).status).to.equal(202);
    await waitForMessage(c, poll.id, (m) => m.poll?.options.find((o) => o.name === "Delivery")?.votes === 1);
    await waitForMessage(c, typo.id, (m) => m.edited_at !== null);
    await waitForMessage(c, oops.id, (m) => m.revoked_at !== null);
    expect(first.id).to.be.a("string");
  });
  after(async () => {
    for (const ctx of contexts) await ctx.close();
    await browser?.close();
    media?.close();
    expect(csp.flat()).to.deep.equal([]);
  });

  it("lists the connection's chats with their unread counts and shows a chat's messages in order with their marks", async () => {
    const page = await pageAs(c.ws.owner.cookie);
    const errors = consoleErrors(page);
    await page.goto(webUrl() + "/connections");
    await page.getByRole("link", { name: `Chats of ${c.slug}` }).click();
    const chats = page.getByRole("list", { name: "Chats" });
    const row = chats.getByRole("listitem").filter({ has: page.getByRole("link", { name: contact, exact: true }) });
    // Four inbound messages, none read yet (the poll is ours).
    await row.getByText("4 unread").waitFor();
    await expectNarrowAndAccessible(page);
    await row.getByRole("link", { name: contact, exact: true }).click();
    await page.getByRole("heading", { name: `Chat with ${contact}` }).waitFor();

    const messages = page.getByRole("list", { name: "Messages" }).getByRole("listitem").filter({ has: page.locator(".meta") });
    await messages.nth(4).waitFor();
    const labels = await messages.evaluateAll((items) => items.map((i) => i.getAttribute("aria-label")));
    expect(labels).to.deep.equal([
      `From ${contact}: Where is my order?`,
      `From ${contact}: [image]`,
      `From ${contact}: It is order 1235`,
      `From ${contact}: wrong chat, sorry`,
      `Sent: poll: ${question}`,
    ]);
    expect(await messages.nth(2).getByText("edited", { exact: true }).count()).to.equal(1);
    expect(await messages.nth(3).getByText("deleted for everyone", { exact: true }).count()).to.equal(1);
    const votes = messages.nth(4).getByRole("list", { name: `Votes on ${question}` });
    expect(await votes.getByRole("listitem").allTextContents()).to.deep.equal(["Pickup: 0 votes", "Delivery: 1 vote"]);

    // The photo opens through the media route, with the session: its bytes, never a stored copy.
    const link = messages.nth(1).getByRole("link", { name: "Open the image receipt.jpg" });
    expect(await link.getAttribute("href")).to.equal(`/v1/messages/${photo}/media`);
    const res = await page.request.get(webUrl() + `/v1/messages/${photo}/media`);
    expect([res.status(), res.headers()["content-type"]]).to.deep.equal([200, "image/jpeg"]);
    expect(Buffer.from(await res.body()).equals(PHOTO)).to.equal(true);
    expect(errors).to.deep.equal([]);
  });

  it("answers through the page: reply quoting, react, send, mark read, each as the API and the network see it", async () => {
    const page = await pageAs(c.ws.owner.cookie);
    await page.goto(webUrl() + `/chats/${c.slug}/${encodeURIComponent(contact)}`);
    const list = page.getByRole("list", { name: "Messages" });
    const question1 = list.getByRole("listitem", { name: `From ${contact}: Where is my order?` });
    const [first] = await chatMessages();

    await question1.getByRole("button", { name: "Reply to “Where is my order?”" }).click();
    await page.getByRole("heading", { name: "Reply" }).waitFor();
    await page.getByLabel("Message", { exact: true }).fill("It left the warehouse today.");
    await page.getByRole("button", { name: "Send reply" }).click();
    const reply = list.getByRole("listitem", { name: "Sent: It left the warehouse today." });
    await reply.getByRole("blockquote", { name: "Quoted message" }).filter({ hasText: "Where is my order?" }).waitFor();
    const replied = (await chatMessages()).find((m) => m.body === "It left the warehouse today.")!;
    expect(replied).to.include({ reply_to: first!.id, direction: "outbound", to: contact });
    const sentReply = await waitFor(() => receivedBy(contact), (r) => r.some((x) => x.message_id === replied.id));
    expect(sentReply.find((x) => x.message_id === replied.id)).to.include({ kind: "message", quoted_message_id: first!.id });

    await question1.getByText("React", { exact: true }).click();
    await question1.getByRole("button", { name: "React with 👍" }).click();
    await question1.getByRole("list", { name: "Reactions" }).getByText("👍 1").waitFor();
    expect((await expectOk(c.client.messages.get({ params: { id: first!.id } }))).reactions).to.deep.equal({ "👍": 1 });
    await waitFor(() => receivedBy(contact), (r) => r.some((x) => x.kind === "reaction" && x.message_id === first!.id && x.emoji === "👍"));

    await page.getByLabel("Message", { exact: true }).fill("Anything else?");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await list.getByRole("listitem", { name: "Sent: Anything else?" }).waitFor();
    const sent = (await chatMessages()).find((m) => m.body === "Anything else?")!;
    expect(sent).to.include({ reply_to: null, direction: "outbound", to: contact, connection: c.slug });

    await page.getByRole("button", { name: "Mark as read" }).click();
    await page.getByRole("status").filter({ hasText: "4 messages marked read." }).waitFor();
    const chat = (await expectOk(c.client.conversations.listChats({ params: { connection: c.slug } }))).data.find((x) => x.chat === contact)!;
    expect(chat.unread_count).to.equal(0);
    expect((await receivedBy(contact)).some((x) => x.kind === "read")).to.equal(true);
    await expectNarrowAndAccessible(page);
    await screenshot(page, "chat");
  });

  it("shows a new message and the contact typing as they happen, without a reload", async () => {
    const page = await pageAs(c.ws.owner.cookie);
    await page.goto(webUrl() + `/chats/${c.slug}/${encodeURIComponent(contact)}`);
    const list = page.getByRole("list", { name: "Messages" });
    await list.getByRole("listitem", { name: "Sent: Anything else?" }).waitFor();
    // Live once the page says so (the event stream is open).
    await page.getByText("New messages appear here as they arrive.").waitFor();
    await sandbox("POST", "/typing", { from: contact, to: c.phone, state: "typing" });
    await page.getByRole("status").filter({ hasText: `${contact} is typing…` }).waitFor();
    await sandbox("POST", "/inbound", { to: c.phone, from: contact, body: "No, thank you!" });
    await list.getByRole("listitem", { name: `From ${contact}: No, thank you!` }).waitFor();
    await sandbox("POST", "/typing", { from: contact, to: c.phone, state: "paused" });
    await page.getByRole("status").filter({ hasText: "is typing" }).waitFor({ state: "detached" });
  });

  it("shows a group's chat with each sender named, and writes into the group", async () => {
    const member = uniquePhone();
    const made = await sandbox("POST", "/groups", { phone: c.phone, subject: "Couriers", members: [{ phone: member }] });
    expect(made.status).to.equal(201);
    const group = made.json.id as string;
    expect((await sandbox("POST", "/inbound", { to: c.phone, from: member, group, body: "Van 3 is late" })).status).to.equal(202);
    const page = await pageAs(c.ws.owner.cookie);
    await page.goto(webUrl() + `/chats/${c.slug}`);
    await page.getByRole("list", { name: "Chats" }).getByRole("link", { name: `group ${group}` }).click();
    const list = page.getByRole("list", { name: "Messages" });
    await list.getByRole("listitem", { name: `From ${member}: Van 3 is late` }).waitFor();
    await page.getByLabel("Message", { exact: true }).fill("Thanks, noted.");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await list.getByRole("listitem", { name: "Sent: Thanks, noted." }).waitFor();
    const chat = await expectOk(c.client.messages.list({ query: { connection: c.slug, chat: `group:${group}` } }));
    expect(chat.data.map((m) => [m.direction, m.body, m.to])).to.deep.equal([
      ["outbound", "Thanks, noted.", { group }],
      ["inbound", "Van 3 is late", { group }],
    ]);
    await waitFor(() => receivedBy(group), (r) => r.some((x) => x.kind === "message" && x.body === "Thanks, noted."));
  });

  it("reads a chat 50 messages at a time: 50 fit one page, the 51st puts the earliest behind a button", async () => {
    const talker = uniquePhone();
    const inbound = async (n: number) => expect((await sandbox("POST", "/inbound", { to: c.phone, from: talker, body: `note ${n}` })).status).to.equal(202);
    const stored = (count: number) =>
      waitFor(() => expectOk(c.client.messages.list({ query: { connection: c.slug, chat: talker, limit: 100 } })), (p) => p.data.length === count, 30_000);
    for (let n = 1; n <= 50; n++) await inbound(n);
    await stored(50);
    const page = await pageAs(c.ws.owner.cookie);
    await page.goto(webUrl() + `/chats/${c.slug}/${encodeURIComponent(talker)}`);
    const items = page.getByRole("list", { name: "Messages" }).getByRole("listitem");
    await items.nth(49).waitFor();
    const earlier = page.getByRole("button", { name: "Show earlier messages" });
    expect([await items.count(), await earlier.count()]).to.deep.equal([50, 0]);

    await inbound(51);
    await stored(51);
    await items.filter({ hasText: "note 51" }).waitFor();
    // The page holds the newest 50: "note 1" waits behind the button, in order once shown.
    expect(await items.count()).to.equal(50);
    expect(await items.first().getAttribute("aria-label")).to.equal(`From ${talker}: note 2`);
    await earlier.click();
    await items.nth(50).waitFor();
    const labels = await items.evaluateAll((li) => li.map((i) => i.getAttribute("aria-label")));
    expect(labels).to.deep.equal(Array.from({ length: 51 }, (_, i) => `From ${talker}: note ${i + 1}`));
    expect(await earlier.count()).to.equal(0);
  });

  it("lets a viewer read the chat but offers no way to answer, react or mark read (the API refuses them too)", async () => {
    const page = await pageAs(viewer.cookie);
    await page.goto(webUrl() + `/chats/${c.slug}/${encodeURIComponent(contact)}`);
    const list = page.getByRole("list", { name: "Messages" });
    await list.getByRole("listitem", { name: `From ${contact}: Where is my order?` }).waitFor();
    await page.getByText("Your role (viewer) reads chats").waitFor();
    expect(await page.getByRole("button", { name: /^Reply to/ }).count()).to.equal(0);
    expect(await page.getByText("React", { exact: true }).count()).to.equal(0);
    expect(await page.getByRole("button", { name: "Mark as read" }).count()).to.equal(0);
    expect(await page.getByLabel("Message", { exact: true }).count()).to.equal(0);
    await expectNarrowAndAccessible(page);
    const [first] = await chatMessages();
    expect((await viewer.client.conversations.reply({ params: { id: first!.id }, body: { body: "hi" } })).status).to.equal(403);
    expect((await viewer.client.conversations.react({ params: { id: first!.id }, body: { emoji: "👍" } })).status).to.equal(403);
    // Reading stays open to the viewer, the photo included.
    expect((await page.request.get(webUrl() + `/v1/messages/${photo}/media`)).status()).to.equal(200);
  });
});
