// What the dashboard's session reaches besides session routes (README.md, "The dashboard"):
// connections (every member reads, a role that may grant connections:write changes them, cross-site
// changes refused) and the message reads (list, one message, export); sending: test/session-send.test.ts.
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";

describe("connections with a dashboard session", () => {
  it("lets the owner and a developer create, pair, suspend and delete; a viewer and billing only read", async () => {
    const ws = await newWorkspace("enterprise");
    const dev = await ws.addMember("developer");
    const viewer = await ws.addMember("viewer");
    const billing = await ws.addMember("billing");
    const created = await expectOk(dev.client.connections.create({ body: { slug: "dash-dev" } }));
    expect(created.slug).to.equal("dash-dev");
    await expectOk(ws.owner.client.connections.pair({ params: { connection: "dash-dev" } }));
    for (const reader of [viewer, billing]) {
      const listed = await expectOk(reader.client.connections.list());
      expect(listed.data.map((c) => c.slug)).to.include("dash-dev");
      const refused = await reader.client.connections.create({ body: { slug: "dash-viewer" } });
      expect(refused.status).to.equal(403);
      expect((await reader.client.connections.suspend({ params: { connection: "dash-dev" } })).status).to.equal(403);
      expect((await reader.client.connections.delete({ params: { connection: "dash-dev" } })).status).to.equal(403);
    }
    expect((await expectOk(ws.owner.client.connections.suspend({ params: { connection: "dash-dev" } }))).state).to.equal("suspended");
    expect((await dev.client.connections.delete({ params: { connection: "dash-dev" } })).status).to.equal(204);
  });

  it("refuses a cookie-authenticated change from another site", async () => {
    const ws = await newWorkspace();
    const res = await http("POST", "/v1/connections", {
      body: { slug: "dash-csrf" },
      headers: { cookie: ws.owner.cookie, origin: "https://evil.example", "sec-fetch-site": "cross-site" },
    });
    expect(res.status).to.equal(403);
    expect(res.json.code).to.equal("cross_site_request");
    const same = await http("POST", "/v1/connections", {
      body: { slug: "dash-csrf" },
      headers: { cookie: ws.owner.cookie, origin: new URL(testEnv().gateway.ctx.config.webUrl).origin },
    });
    expect(same.status).to.equal(201);
  });
});

describe("messages with a dashboard session", () => {
  it("lets any member list, read and export messages", async () => {
    const ws = await newWorkspace("enterprise");
    const viewer = await ws.addMember("viewer");
    const listed = await expectOk(viewer.client.messages.list({ query: {} }));
    expect(listed.data).to.deep.equal([]);
    expect((await viewer.client.messages.get({ params: { id: "msg_unknown" } })).status).to.equal(404);
    const csv = await http("GET", "/v1/messages/export", { headers: { cookie: viewer.cookie } });
    expect(csv.status).to.equal(200);
    expect(csv.headers.get("content-type")).to.match(/^text\/csv/);
  });
});
