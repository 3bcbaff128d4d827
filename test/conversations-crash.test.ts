// A reply and a poll are sends: accepted by a process killed (SIGKILL) before their hand-off,
// they reach the network exactly once after a restart, the reply still quoting its message.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { createClient, expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { startChildGateway } from "./support/child-gateway.js";
import { inboundFrom, linkedConnection, receivedBy, uniquePhone, type Linked } from "./support/conversations.js";
import { waitFor } from "./support/wait.js";

describe("conversations across a crash", function () {
  this.timeout(120_000);
  let c: Linked;

  before(async () => {
    c = await linkedConnection();
    // This test's processes do the hand-offs; the test gateway's dispatcher stands aside.
    await testEnv().gateway.ctx.dispatcher.stop();
  });
  after(() => testEnv().gateway.ctx.dispatcher.start());

  it("hands off a reply and a poll accepted by a killed process exactly once after restart", async () => {
    const contact = uniquePhone();
    const quoted = await inboundFrom(c, contact);
    const pollTo = uniquePhone();
    const accepting = await startChildGateway({ DISPATCHER: "off" });
    const client = createClient({ baseUrl: accepting.url, apiKey: c.key });
    const key = `crash-${randomBytes(4).toString("hex")}`;
    const reply = await expectOk(client.conversations.reply({ params: { id: quoted.id }, body: { body: "on it" }, headers: { "idempotency-key": `${key}-r` } }));
    const poll = await expectOk(
      client.conversations.poll({ body: { connection: c.slug, to: pollTo, question: "When?", options: ["today", "tomorrow"] }, headers: { "idempotency-key": `${key}-p` } }),
    );
    await accepting.kill();

    const restarted = await startChildGateway({ DISPATCH_LOCK_SECONDS: "2" });
    try {
      const after = createClient({ baseUrl: restarted.url, apiKey: c.key });
      for (const id of [reply.id, poll.id]) {
        await waitFor(() => expectOk(after.messages.get({ params: { id } })), (m) => m.status === "read", 30_000);
      }
      // The same keys again, now: replayed, nothing sent twice.
      const again = await after.conversations.reply({ params: { id: quoted.id }, body: { body: "on it" }, headers: { "idempotency-key": `${key}-r` } });
      expect(again.status === 202 && again.body.id).to.equal(reply.id);
      const replies = (await receivedBy(contact)).filter((r) => r.kind === "message");
      expect(replies.map((r) => [r.message_id, r.quoted_message_id])).to.deep.equal([[reply.id, quoted.id]]);
      const polls = await receivedBy(pollTo);
      expect(polls.map((r) => [r.message_id, (r.poll as { question: string }).question])).to.deep.equal([[poll.id, "When?"]]);
    } finally {
      await restarted.terminate();
    }
  });
});
