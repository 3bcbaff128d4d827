// The confirm step of a mutating tool. On 2026-07-28, a client that can show a form is asked
// (a multi-round-trip elicitation) and the person's answer decides; every other client gets the
// preview and confirms with `confirm: true`, which keeps working everywhere.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { Client, ElicitRequestFormParams } from "@modelcontextprotocol/client";
import { testEnv } from "./setup.js";
import { newWorkspace, type TestWorkspace } from "./support/actors.js";
import { mcpClient, messageCount, type Revision } from "./support/mcp.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";

describe("tool endpoint (MCP): confirming a mutating tool", () => {
  let ws: TestWorkspace;
  let slug: string;
  let key: string;

  before(async () => {
    ws = await newWorkspace();
    const setup = await ws.key(["connections:read", "connections:write"]);
    slug = `c-${randomBytes(3).toString("hex")}`;
    await pairConnection(setup.client, slug, uniquePhone());
    key = (await ws.key(["mcp:read", "mcp:write"])).key;
  });

  /** A client that can show forms, answering each with `answer`; the questions it was asked. */
  async function askingClient(revision: Revision, answer: { action: "accept" | "decline" | "cancel"; content?: Record<string, string | number | boolean | string[]> }) {
    const asked: ElicitRequestFormParams[] = [];
    const client = await mcpClient(key, revision, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler("elicitation/create", (request) => {
      asked.push(request.params as ElicitRequestFormParams);
      return answer;
    });
    return { client, asked };
  }

  function sendArgs() {
    return { connection: slug, to: uniquePhone(), body: `secret ${randomBytes(6).toString("hex")}` };
  }

  it("2026-07-28: asks the person with a form naming the send (never its body); accepted, it sends once", async () => {
    const { client, asked } = await askingClient("2026-07-28", { action: "accept", content: { confirm: true } });
    const args = sendArgs();
    const before = await messageCount(ws.id);
    const result = await client.callTool({ name: "send_message", arguments: args });
    expect(result.isError).to.not.equal(true);
    expect(result.structuredContent).to.include({ preview: false, done: "queued" });
    expect(asked).to.have.length(1);
    expect(asked[0]!.message).to.contain(args.to).and.contain(slug).and.not.contain(args.body);
    expect(asked[0]!.requestedSchema.required).to.deep.equal(["confirm"]);
    expect(await messageCount(ws.id)).to.equal(before + 1);
    await client.close();
  });

  it("2026-07-28: declined, cancelled or accepted without the box ticked, nothing is sent", async () => {
    for (const answer of [{ action: "decline" as const }, { action: "cancel" as const }, { action: "accept" as const, content: { confirm: false } }]) {
      const { client, asked } = await askingClient("2026-07-28", answer);
      const before = await messageCount(ws.id);
      const result = await client.callTool({ name: "send_message", arguments: sendArgs() });
      expect(result.structuredContent, answer.action).to.include({ preview: true, declined: true });
      expect(asked, answer.action).to.have.length(1);
      expect(await messageCount(ws.id), answer.action).to.equal(before);
      await client.close();
    }
  });

  it("2026-07-28: a cancel the state table refuses is answered as a preview, not asked", async () => {
    const { client, asked } = await askingClient("2026-07-28", { action: "accept", content: { confirm: true } });
    const sent = await client.callTool({ name: "send_message", arguments: { ...sendArgs(), confirm: true } });
    const id = (sent.structuredContent as { id: string }).id;
    await testEnv().gateway.ctx.db.query(`UPDATE messages SET status = 'delivered' WHERE id = $1`, [id]);
    const result = await client.callTool({ name: "cancel_message", arguments: { id } });
    expect(result.structuredContent).to.include({ preview: true }).and.have.property("refused");
    expect(asked).to.have.length(0);
    await client.close();
  });

  it("an answer bound to other arguments, or a state we did not mint, confirms nothing", async () => {
    const client = await mcpClient(key, "2026-07-28", { capabilities: { elicitation: { form: {} } }, inputRequired: { autoFulfill: false } });
    const args = sendArgs();
    const first = (await client.callTool({ name: "send_message", arguments: args }, { allowInputRequired: true })) as unknown as { resultType: string; requestState: string };
    expect(first.resultType).to.equal("input_required");
    const accepted = { confirm: { action: "accept", content: { confirm: true } } };
    const before = await messageCount(ws.id);
    const other = (await client.callTool(
      { name: "send_message", arguments: { ...args, to: uniquePhone() }, inputResponses: accepted, requestState: first.requestState } as never,
      { allowInputRequired: true },
    )) as unknown as { resultType: string };
    expect(other.resultType).to.equal("input_required");
    const forged = `${first.requestState.slice(0, -2)}AA`;
    let refused: unknown;
    await client.callTool({ name: "send_message", arguments: args, inputResponses: accepted, requestState: forged } as never, { allowInputRequired: true }).catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/Invalid or expired requestState/);
    expect(await messageCount(ws.id)).to.equal(before);
    await client.close();
  });

  for (const [revision, why] of [
    ["2026-07-28", "a client that cannot show forms"],
    ["2025-11-25", "a client of a revision without multi-round-trip requests"],
  ] as const) {
    it(`${revision}: ${why} gets the preview, and confirm: true acts`, async () => {
      const { client, asked } =
        revision === "2025-11-25" ? await askingClient(revision, { action: "accept", content: { confirm: true } }) : { client: await mcpClient(key, revision), asked: [] };
      const args = sendArgs();
      const before = await messageCount(ws.id);
      const preview = await client.callTool({ name: "send_message", arguments: args });
      expect(preview.structuredContent).to.include({ preview: true, body_length: args.body.length });
      expect(JSON.stringify(preview)).to.not.contain(args.body);
      expect(await messageCount(ws.id)).to.equal(before);
      const sent = await client.callTool({ name: "send_message", arguments: { ...args, confirm: true } });
      expect(sent.structuredContent).to.include({ preview: false });
      expect(asked).to.have.length(0);
      expect(await messageCount(ws.id)).to.equal(before + 1);
      await (client as Client).close();
    });
  }
});
