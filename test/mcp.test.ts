// The tool endpoint as assistants use it: the official SDK's client over streamable HTTP with an
// API key, and raw HTTP for what the SDK hides (statuses, headers).
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { mcpClient as clientOn, messageCount, READ_TOOLS, WRITE_TOOLS } from "./support/mcp.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";

/** These tests speak the current revision; test/mcp-revisions.test.ts covers both. */
const mcpClient = (bearer: string) => clientOn(bearer, "2026-07-28");

const MCP_HEADERS = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };

function rpc(method: string, params: Record<string, unknown> = {}) {
  return { jsonrpc: "2.0", id: 1, method, params };
}

describe("tool endpoint (MCP) with an API key", () => {
  let ws: TestWorkspace;
  let slug: string;
  let readKey: string;
  let writeKey: string;

  before(async () => {
    ws = await newWorkspace();
    const setup = await ws.key(["connections:read", "connections:write"]);
    slug = `m-${randomBytes(3).toString("hex")}`;
    await pairConnection(setup.client, slug, uniquePhone());
    readKey = (await ws.key(["mcp:read"])).key;
    writeKey = (await ws.key(["mcp:read", "mcp:write"])).key;
  });

  it("lists the read tools to an mcp:read key, each with title, description, schemas and annotations", async () => {
    const client = await mcpClient(readKey);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal([...READ_TOOLS].sort());
    for (const t of tools) {
      expect(t.title, t.name).to.be.a("string").and.not.empty;
      expect(t.description, t.name).to.be.a("string").and.not.empty;
      expect(t.inputSchema.type).to.equal("object");
      expect(t.outputSchema?.type).to.equal("object");
      expect(t.annotations).to.include({ readOnlyHint: true, destructiveHint: false });
    }
    await client.close();
  });

  it("lists every tool to an mcp:write key; mutating tools are not read-only", async () => {
    const client = await mcpClient(writeKey);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal([...READ_TOOLS, ...WRITE_TOOLS].sort());
    for (const t of tools.filter((t) => WRITE_TOOLS.includes(t.name))) {
      expect(t.annotations?.readOnlyHint, t.name).to.equal(false);
      expect(t.inputSchema.properties, t.name).to.have.property("confirm");
    }
    await client.close();
  });

  it("answers whoami and list_connections from the key's workspace", async () => {
    const client = await mcpClient(readKey);
    const who = await client.callTool({ name: "whoami", arguments: {} });
    expect(who.isError).to.not.equal(true);
    expect((who.structuredContent as { workspace: { id: string } }).workspace.id).to.equal(ws.id);
    const list = await client.callTool({ name: "list_connections", arguments: {} });
    expect((list.structuredContent as { data: { slug: string }[] }).data.map((c) => c.slug)).to.deep.equal([slug]);
    const bad = await client.callTool({ name: "get_connection", arguments: { connection: "" } });
    expect(bad.isError).to.equal(true);
    const missing = await client.callTool({ name: "get_connection", arguments: { connection: "nope-nope" } });
    expect(missing.isError).to.equal(true);
    expect(JSON.stringify(missing.content)).to.contain("not_found");
    await client.close();
  });

  it("previews send_message without sending, sends once when confirmed twice, and never shows the body", async () => {
    const client = await mcpClient(writeKey);
    const body = `secret text ${randomBytes(6).toString("hex")}`;
    const args = { connection: slug, to: uniquePhone(), body };
    const before = await messageCount(ws.id);

    const preview = await client.callTool({ name: "send_message", arguments: args });
    expect(preview.isError).to.not.equal(true);
    const p = preview.structuredContent as Record<string, unknown>;
    expect(p.preview).to.equal(true);
    expect(p.body_length).to.equal(body.length);
    expect(p.body_sha256).to.match(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(preview)).to.not.contain(body);
    expect(await messageCount(ws.id)).to.equal(before);

    const sent = await client.callTool({ name: "send_message", arguments: { ...args, confirm: true } });
    const s = sent.structuredContent as { id: string; preview: boolean; replayed: boolean };
    expect(s.preview).to.equal(false);
    expect(s.id).to.match(/^msg_/);
    expect(JSON.stringify(sent)).to.not.contain(body);
    const again = await client.callTool({ name: "send_message", arguments: { ...args, confirm: true } });
    expect((again.structuredContent as { id: string; replayed: boolean })).to.include({ id: s.id, replayed: true });
    expect(await messageCount(ws.id)).to.equal(before + 1);

    const got = await client.callTool({ name: "get_message", arguments: { id: s.id } });
    const m = got.structuredContent as Record<string, unknown>;
    expect(m.id).to.equal(s.id);
    expect(m).to.not.have.any.keys("body", "media", "location", "context", "metadata");
    expect(m.timeline).to.be.an("array").that.is.not.empty;
    const listed = await client.callTool({ name: "list_messages", arguments: { limit: 100 } });
    expect(JSON.stringify(listed)).to.not.contain(body);
    await client.close();
  });

  it("previews cancel_message and cancels only when confirmed", async () => {
    const client = await mcpClient(writeKey);
    const later = new Date(Date.now() + 3600_000).toISOString();
    const sent = await client.callTool({ name: "send_message", arguments: { connection: slug, to: uniquePhone(), body: "later", send_at: later, confirm: true } });
    const id = (sent.structuredContent as { id: string }).id;
    const preview = await client.callTool({ name: "cancel_message", arguments: { id } });
    expect(preview.structuredContent).to.include({ preview: true, status: "scheduled", new_status: "canceled" });
    const still = await client.callTool({ name: "get_message", arguments: { id } });
    expect((still.structuredContent as { status: string }).status).to.equal("scheduled");
    const done = await client.callTool({ name: "cancel_message", arguments: { id, confirm: true } });
    expect(done.structuredContent).to.include({ preview: false, status: "canceled" });
    await client.close();
  });

  it("refuses a mutating tool to a read-only credential: 403 insufficient_scope with WWW-Authenticate", async () => {
    const res = await http("POST", "/v1/mcp", {
      headers: { ...MCP_HEADERS, authorization: `Bearer ${readKey}` },
      body: rpc("tools/call", { name: "send_message", arguments: { connection: slug, to: uniquePhone(), body: "x", confirm: true } }),
    });
    expect(res.status).to.equal(403);
    expect(res.json.code).to.equal("insufficient_scope");
    expect(res.headers.get("www-authenticate")).to.match(/^Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/v1\/mcp"/);
  });

  it("answers a 2026-07-28 request without a handshake (docs/mcp.md's curl), with a private cache hint", async () => {
    const envelope = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
    const headers = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", authorization: `Bearer ${readKey}` };
    const list = await http("POST", "/v1/mcp", { headers: { ...headers, "mcp-method": "tools/list" }, body: rpc("tools/list", { _meta: envelope }) });
    expect(list.status).to.equal(200);
    const result = list.json.result as { tools: { name: string }[]; ttlMs: number; cacheScope: string };
    expect(result.tools.map((t) => t.name).sort()).to.deep.equal([...READ_TOOLS].sort());
    expect(result).to.include({ ttlMs: 300_000, cacheScope: "private" });
    const write = await http("POST", "/v1/mcp", {
      headers: { ...headers, "mcp-method": "tools/call", "mcp-name": "send_message" },
      body: rpc("tools/call", { name: "send_message", arguments: { connection: slug, to: uniquePhone(), body: "x", confirm: true }, _meta: envelope }),
    });
    expect(write.status).to.equal(403);
    expect(write.json.code).to.equal("insufficient_scope");
  });

  it("answers 401 with the protected-resource metadata address without a credential or with a bad one", async () => {
    const url = `${testEnv().gateway.ctx.config.webUrl}/.well-known/oauth-protected-resource/v1/mcp`;
    const none = await http("POST", "/v1/mcp", { headers: MCP_HEADERS, body: rpc("tools/list") });
    expect(none.status).to.equal(401);
    expect(none.headers.get("www-authenticate")).to.equal(`Bearer resource_metadata="${url}"`);
    const bad = await http("POST", "/v1/mcp", { headers: { ...MCP_HEADERS, authorization: "Bearer svc_mcp_at_nope" }, body: rpc("tools/list") });
    expect(bad.status).to.equal(401);
    expect(bad.headers.get("www-authenticate")).to.equal(`Bearer resource_metadata="${url}", error="invalid_token"`);
  });

  it("refuses a key without mcp:read (403) and a plan without the tool endpoint (402)", async () => {
    const other = await ws.key(["messages:read"]);
    const res = await http("POST", "/v1/mcp", { headers: { ...MCP_HEADERS, authorization: `Bearer ${other.key}` }, body: rpc("tools/list") });
    expect(res.status).to.equal(403);
    const free = await newWorkspace("free");
    const freeKey = await free.key(["mcp:read"]);
    const off = await http("POST", "/v1/mcp", { headers: { ...MCP_HEADERS, authorization: `Bearer ${freeKey.key}` }, body: rpc("tools/list") });
    expect(off.status).to.equal(402);
    expect(off.json).to.include({ code: "plan_required", feature: "mcp" });
  });

  it("answers GET and DELETE 405, and refuses a foreign Host or Origin (DNS rebinding)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await http(method, "/v1/mcp", { headers: { authorization: `Bearer ${readKey}` } });
      expect(res.status, method).to.equal(405);
      expect(res.headers.get("allow")).to.equal("POST");
    }
    const origin = await http("POST", "/v1/mcp", { headers: { ...MCP_HEADERS, origin: "https://evil.example", authorization: `Bearer ${readKey}` }, body: rpc("tools/list") });
    expect(origin.status).to.equal(403);
    const own = await http("POST", "/v1/mcp", {
      headers: { ...MCP_HEADERS, origin: new URL(testEnv().baseUrl).origin, authorization: `Bearer ${readKey}` },
      body: rpc("tools/list"),
    });
    expect(own.status).to.equal(200);
    // A gateway on a loopback address accepts loopback origins on any port (local proxies).
    const local = await http("POST", "/v1/mcp", { headers: { ...MCP_HEADERS, origin: "http://localhost:1", authorization: `Bearer ${readKey}` }, body: rpc("tools/list") });
    expect(local.status).to.equal(200);
    const nullOrigin = await http("POST", "/v1/mcp", { headers: { ...MCP_HEADERS, origin: "null", authorization: `Bearer ${readKey}` }, body: rpc("tools/list") });
    expect(nullOrigin.status).to.equal(403);
    // fetch cannot forge Host; a raw request can.
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const u = new URL(`${testEnv().baseUrl}/v1/mcp`);
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", headers: { host: "evil.example", ...MCP_HEADERS, "content-type": "application/json", authorization: `Bearer ${readKey}` } }, (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end(JSON.stringify(rpc("tools/list")));
    });
    expect(status).to.equal(403);
  });

  it("GET /v1/mcp/tools lists what the credential may call", async () => {
    const read = await http("GET", "/v1/mcp/tools", { headers: { authorization: `Bearer ${readKey}` } });
    expect(read.status).to.equal(200);
    const data = read.json.data as { name: string; read_only: boolean; required_scope: string; input_schema: { type: string } }[];
    expect(data.map((t) => t.name).sort()).to.deep.equal([...READ_TOOLS].sort());
    expect(data.every((t) => t.read_only && t.required_scope === "mcp:read" && t.input_schema.type === "object")).to.equal(true);
    const write = await http("GET", "/v1/mcp/tools", { headers: { authorization: `Bearer ${writeKey}` } });
    const send = (write.json.data as { name: string; read_only: boolean; required_scope: string }[]).find((t) => t.name === "send_message");
    expect(send).to.include({ read_only: false, required_scope: "mcp:write" });
  });
});
