// Messages written on the linked phone itself (POST /sandbox/v1/phone-send): reported by the
// engine as `message.outbound_from_phone`, recorded as outbound messages the gateway did not send.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

describe("messages written on the linked phone (sandbox)", () => {
  let client: Client;
  let slug: string;
  let linked: string;

  before(async () => {
    const ws = await newWorkspace();
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
    slug = `phone-${randomBytes(3).toString("hex")}`;
    linked = uniquePhone("+1554");
    await pairConnection(client, slug, linked);
  });

  const recorded = (providerId: string) =>
    waitFor(
      async () => (await expectOk(client.messages.list({ query: { connection: slug, limit: 100 } }))).data.find((m) => m.provider_message_id === providerId),
      (m) => m !== undefined,
    );

  it("records a message to a contact and one in a group as outbound, sent, with origin phone", async () => {
    const to = uniquePhone("+1555");
    const res = await sandbox("POST", "/phone-send", { from: linked, to, body: "I'll take it from here" });
    expect(res.status).to.equal(202);
    expect(res.json.sessions).to.equal(1);
    const m = await recorded(res.json.provider_message_id as string);
    expect(m).to.deep.include({ direction: "outbound", status: "sent", to, from: linked, body: "I'll take it from here", metadata: { origin: "phone" } });
    const timeline = await expectOk(client.messages.get({ params: { id: m!.id } }));
    expect(JSON.stringify(timeline)).to.contain("written on the linked phone");

    const g = await sandbox("POST", "/phone-send", { from: linked, group: "120363000000000009@g.us", location: { latitude: 1.5, longitude: 2.5 } });
    const gm = await recorded(g.json.provider_message_id as string);
    expect(gm).to.deep.include({ to: { group: "120363000000000009@g.us" }, location: { latitude: 1.5, longitude: 2.5, title: null } });
  });

  it("refuses a phone-send without exactly one recipient or without content, and one from an unlinked phone", async () => {
    expect((await sandbox("POST", "/phone-send", { from: linked, body: "nobody" })).status).to.equal(400);
    expect((await sandbox("POST", "/phone-send", { from: linked, to: uniquePhone(), group: "120363000000000009@g.us", body: "both" })).status).to.equal(400);
    expect((await sandbox("POST", "/phone-send", { from: linked, to: uniquePhone() })).status).to.equal(400);
    const unlinked = await sandbox("POST", "/phone-send", { from: uniquePhone("+1553"), to: uniquePhone(), body: "x" });
    expect(unlinked.status).to.equal(404);
  });
});
