// The pure rules of the message store: the send rules (store/send-rules.ts) and the named
// actions of the status table (status.ts).
import { expect } from "chai";
import { MESSAGE_STATUSES } from "../contract/index.js";
import { canMove, sourcesOf, targetOf, type MessageAction } from "../server/messages/status.js";
import { refusalText, sendRefusal, type SendFacts } from "../server/messages/store/send-rules.js";

const facts = (patch: Partial<SendFacts> = {}): SendFacts => ({
  slug: "support",
  connection: { state: "connected" },
  plan: { name: "Pro", scheduling: true, messagesPerMonth: 100 },
  used: 0,
  later: false,
  now: true,
  ...patch,
});

describe("send rules", () => {
  it("lets a send through when every rule holds", () => {
    expect(sendRefusal(facts())).to.equal(null);
  });

  it("refuses at the allowance: the last message that fits is the 100th, the 101st is refused", () => {
    expect(sendRefusal(facts({ used: 99 }))).to.equal(null);
    expect(sendRefusal(facts({ used: 100 }))).to.deep.equal({ code: "quota_exceeded", plan: "Pro", allowance: 100 });
    expect(sendRefusal(facts({ used: 1_000_000, plan: { name: "Enterprise", scheduling: true, messagesPerMonth: null } }))).to.equal(null);
  });

  it("checks in the order users see: connection, plan, readiness, allowance", () => {
    const everythingWrong = facts({ connection: null, later: true, plan: { name: "Free", scheduling: false, messagesPerMonth: 0 } });
    expect(sendRefusal(everythingWrong)?.code).to.equal("connection_not_found");
    expect(sendRefusal({ ...everythingWrong, connection: { state: "pairing" } })?.code).to.equal("plan_required");
    expect(sendRefusal({ ...everythingWrong, connection: { state: "pairing" }, later: false })?.code).to.equal("connection_not_ready");
    expect(sendRefusal({ ...everythingWrong, connection: { state: "connected" }, later: false })?.code).to.equal("quota_exceeded");
  });

  it("checks the connection's readiness only for a send that goes now, and the plan only for one that waits", () => {
    expect(sendRefusal(facts({ connection: { state: "disconnected" }, later: true, now: false }))).to.equal(null);
    expect(sendRefusal(facts({ connection: { state: "disconnected" } }))).to.deep.equal({ code: "connection_not_ready", slug: "support", state: "disconnected" });
    expect(sendRefusal(facts({ plan: { name: "Free", scheduling: false, messagesPerMonth: null } }))).to.equal(null);
  });

  it("explains each refusal in a sentence naming what was refused", () => {
    expect(refusalText({ code: "connection_not_ready", slug: "support", state: "pairing" })).to.equal("The connection support is pairing, not connected.");
    expect(refusalText({ code: "quota_exceeded", plan: "Free", allowance: 50 })).to.equal("The Free plan allows 50 messages a month.");
  });
});

describe("message actions", () => {
  const actions: MessageAction[] = ["markSubmitting", "recordSubmitted", "recordRetry", "recordFailed", "cancel", "reschedule", "release", "expire"];

  it("applies every action only from statuses the lifecycle table allows", () => {
    for (const action of actions) {
      for (const from of sourcesOf(action)) expect(canMove(from, targetOf(action)), `${action}: ${from}`).to.equal(true);
    }
  });

  it("never hands off a scheduled message: it reaches the queue through release only", () => {
    expect(sourcesOf("markSubmitting")).to.not.include("scheduled");
    expect(sourcesOf("release")).to.deep.equal(["scheduled"]);
  });

  it("cancels only before the hand-off", () => {
    const cancelable = MESSAGE_STATUSES.filter((s) => sourcesOf("cancel").includes(s));
    expect(cancelable).to.deep.equal(["scheduled", "accepted", "queued"]);
  });
});
