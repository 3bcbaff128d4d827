// Every tool, on each protocol revision the endpoint serves (2026-07-28 and 2025-11-25), with
// each kind of credential (an API key, an OAuth access token): the official SDK's client (v2)
// lists the tools and calls each one, mutating ones confirmed. The OAuth token of 2026-07-28
// comes through a Client ID Metadata Document (what that revision prefers), the other one through
// dynamic registration (what older clients do). A client of the 1.x SDK still works on 2025-11-25.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { Client } from "@modelcontextprotocol/client";
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type Client as ApiClient, type TestWorkspace } from "./support/actors.js";
import { mcpClient, READ_TOOLS, REVISIONS, WRITE_TOOLS, type Revision } from "./support/mcp.js";
import { ClientDocuments, obtainTokens, obtainTokensWithDocument } from "./support/oauth.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";
import { Receiver } from "./support/webhook-receiver.js";

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Structured> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).to.not.equal(true);
  return result.structuredContent as Structured;
}

describe("tool endpoint (MCP): every tool on each revision, with each credential", function () {
  let ws: TestWorkspace;
  let api: ApiClient;
  let slug: string;
  let messageId: string;
  let endpointId: string;
  let receiver: Receiver;
  let documents: ClientDocuments;
  const credentials = new Map<string, string>();

  before(async () => {
    ws = await newWorkspace();
    api = (await ws.key(["connections:read", "connections:write", "messages:write", "schedules:write", "webhooks:write"])).client;
    slug = `r-${randomBytes(3).toString("hex")}`;
    await pairConnection(api, slug, uniquePhone());
    receiver = await Receiver.start();
    endpointId = (await expectOk(api.webhooks.create({ body: { url: receiver.url, events: ["message.sent"] } }))).id;
    messageId = (await expectOk(api.messages.send({ body: { connection: slug, to: uniquePhone(), body: "hello" } }))).id;
    await waitFor(async () => receiver.events("message.sent").length, (n) => n > 0);
    credentials.set("an API key", (await ws.key(["mcp:read", "mcp:write"])).key);
    documents = await ClientDocuments.start();
    credentials.set("an OAuth token/2026-07-28", (await obtainTokensWithDocument(documents, ws.owner.cookie)).access);
    credentials.set("an OAuth token/2025-11-25", (await obtainTokens(ws.owner.cookie)).access);
  });

  after(async () => {
    await receiver?.close();
    await documents?.close();
  });

  async function schedule(name: string): Promise<string> {
    const body = { name, timezone: "UTC", recurrence: { type: "daily", hour: 3, minute: 0 }, message: { connection: slug, to: uniquePhone(), body: "daily" } };
    return (await expectOk(api.schedules.create({ body: body as never }))).id;
  }

  for (const revision of REVISIONS) {
    for (const credential of ["an API key", "an OAuth token"]) {
      it(`${revision} with ${credential}: lists every tool and calls each`, async () => {
        const bearer = credentials.get(credential === "an API key" ? credential : `${credential}/${revision}`)!;
        const client = await mcpClient(bearer, revision as Revision);
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name).sort()).to.deep.equal([...READ_TOOLS, ...WRITE_TOOLS].sort());

        const who = await call(client, "whoami", {});
        expect(who).to.deep.include({ scopes: ["mcp:read", "mcp:write"] });
        expect((who.principal as Structured).type).to.equal(credential === "an API key" ? "api_key" : "oauth_token");
        expect((who.workspace as Structured).id).to.equal(ws.id);
        expect(((await call(client, "list_connections", {})).data as Structured[]).map((c) => c.slug)).to.deep.equal([slug]);
        expect(await call(client, "get_connection", { connection: slug })).to.include({ slug, state: "connected" });
        expect(await call(client, "check_number", { connection: slug, phone: uniquePhone() })).to.have.property("checked");
        expect(((await call(client, "list_messages", { limit: 100 })).data as Structured[]).map((m) => m.id)).to.include(messageId);
        expect(await call(client, "get_message", { id: messageId })).to.include({ id: messageId });
        expect(await call(client, "get_usage", { days: 7 })).to.include({ days: 7 });
        expect(((await call(client, "list_chats", { connection: slug })).data as Structured[]).length).to.be.greaterThan(0);
        expect(await call(client, "react_to_message", { id: messageId, emoji: "👍", confirm: true })).to.include({ preview: false, done: "reacted" });
        expect(await call(client, "mark_read", { id: messageId, confirm: true })).to.include({ preview: false, marked: 0 });
        const deliveries = await call(client, "list_webhook_deliveries", { endpoint_id: endpointId });
        expect((deliveries.data as Structured[]).length).to.be.greaterThan(0);

        const to = uniquePhone();
        const later = new Date(Date.now() + 3600_000).toISOString();
        const sent = await call(client, "send_message", { connection: slug, to, body: `from ${revision}`, send_at: later, confirm: true });
        expect(sent).to.include({ preview: false, status: "scheduled" });
        expect(await call(client, "cancel_message", { id: sent.id, confirm: true })).to.include({ status: "canceled" });

        const daily = await schedule(`${revision} ${credential}`);
        expect(((await call(client, "list_schedules", {})).data as Structured[]).map((s) => s.id)).to.include(daily);
        expect(await call(client, "get_schedule", { id: daily })).to.include({ id: daily, status: "active" });
        expect(await call(client, "pause_schedule", { id: daily, confirm: true })).to.include({ status: "paused" });
        expect(await call(client, "resume_schedule", { id: daily, confirm: true })).to.include({ status: "active" });
        expect(await call(client, "cancel_schedule", { id: daily, confirm: true })).to.include({ status: "canceled" });
        await client.close();
      });
    }
  }

  it("a client of the 1.x SDK (deployed assistants) lists and calls tools on 2025-11-25", async () => {
    const client = new V1Client({ name: "v1-client", version: "1.0.0" });
    const transport = new V1Transport(new URL(`${testEnv().baseUrl}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${credentials.get("an API key")}` } } });
    await client.connect(transport);
    expect(transport.protocolVersion).to.equal("2025-11-25");
    expect((await client.listTools()).tools).to.have.length(READ_TOOLS.length + WRITE_TOOLS.length);
    const got = await client.callTool({ name: "get_message", arguments: { id: messageId } });
    expect(got.structuredContent).to.include({ id: messageId });
    await client.close();
  });
});
