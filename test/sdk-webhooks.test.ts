// The webhook signature scheme (docs/webhooks.md), through the SDK helpers the server also signs with.
import { expect } from "chai";
import { createHmac } from "node:crypto";
import { signWebhookPayload, verifyWebhook, WebhookVerificationError, type WebhookVerificationFailure } from "../sdk/src/index.js";

const secret = "whsec_test_0123456789abcdef";
const now = 1_760_000_000;
const event = { id: "evt_01", type: "message.delivered", created_at: "2025-10-09T08:53:20Z", connection: "support", data: { id: "msg_01" } };
const body = JSON.stringify(event);

function headersFor(signature: string, timestamp?: number): Record<string, string> {
  return { "svc-signature": signature, ...(timestamp !== undefined && { "svc-timestamp": String(timestamp) }) };
}

function failure(fn: () => unknown): WebhookVerificationFailure {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
  expect.fail("verification passed");
}

describe("sdk webhook signatures", () => {
  it("signs t=<unix seconds>,v1=<hex HMAC-SHA256(secret, '<t>.<raw body>')>", () => {
    const expected = createHmac("sha256", secret).update(`${now}.${body}`).digest("hex");
    expect(signWebhookPayload(secret, now, body)).to.equal(`t=${now},v1=${expected}`);
    expect(signWebhookPayload(secret, now, Buffer.from(body))).to.equal(`t=${now},v1=${expected}`);
  });

  it("accepts a valid signature and returns the parsed event", () => {
    const parsed = verifyWebhook({ payload: body, headers: headersFor(signWebhookPayload(secret, now, body), now), secret, now });
    expect(parsed).to.deep.equal(event);
  });

  it("accepts a Buffer body, a fetch Headers object and any header case", () => {
    const signature = signWebhookPayload(secret, now, body);
    expect(verifyWebhook({ payload: Buffer.from(body), headers: new Headers({ "Svc-Signature": signature }), secret, now }).id).to.equal("evt_01");
    expect(verifyWebhook({ payload: new TextEncoder().encode(body), headers: { "Svc-Signature": signature }, secret, now }).id).to.equal("evt_01");
  });

  it("rejects a tampered body with signature_mismatch", () => {
    const signature = signWebhookPayload(secret, now, body);
    const tampered = body.replace("message.delivered", "message.failed");
    expect(failure(() => verifyWebhook({ payload: tampered, headers: headersFor(signature), secret, now }))).to.equal("signature_mismatch");
  });

  it("rejects a signature made with another secret", () => {
    const signature = signWebhookPayload("whsec_other", now, body);
    expect(failure(() => verifyWebhook({ payload: body, headers: headersFor(signature), secret, now }))).to.equal("signature_mismatch");
  });

  it("rejects a signature whose t was changed (the timestamp is signed)", () => {
    const v1 = signWebhookPayload(secret, now, body).split(",v1=")[1]!;
    expect(failure(() => verifyWebhook({ payload: body, headers: headersFor(`t=${now + 1},v1=${v1}`), secret, now }))).to.equal("signature_mismatch");
  });

  it("accepts a timestamp exactly 300 s old and rejects 301 s", () => {
    const at300 = now - 300;
    const at301 = now - 301;
    expect(verifyWebhook({ payload: body, headers: headersFor(signWebhookPayload(secret, at300, body), at300), secret, now }).id).to.equal("evt_01");
    const stale = headersFor(signWebhookPayload(secret, at301, body), at301);
    expect(failure(() => verifyWebhook({ payload: body, headers: stale, secret, now }))).to.equal("timestamp_too_old");
  });

  it("rejects a timestamp more than the tolerance ahead, and honours toleranceSeconds", () => {
    const ahead = now + 301;
    const headers = headersFor(signWebhookPayload(secret, ahead, body));
    expect(failure(() => verifyWebhook({ payload: body, headers, secret, now }))).to.equal("timestamp_in_future");
    expect(verifyWebhook({ payload: body, headers, secret, now, toleranceSeconds: 400 }).id).to.equal("evt_01");
    const old = headersFor(signWebhookPayload(secret, now - 60, body));
    expect(failure(() => verifyWebhook({ payload: body, headers: old, secret, now, toleranceSeconds: 30 }))).to.equal("timestamp_too_old");
  });

  it("accepts when one of several v1 entries matches (secret rotation)", () => {
    const current = signWebhookPayload(secret, now, body).split(",v1=")[1]!;
    const previous = signWebhookPayload("whsec_previous", now, body).split(",v1=")[1]!;
    const header = `t=${now},v1=${previous},v1=${current},v0=ignored`;
    expect(verifyWebhook({ payload: body, headers: headersFor(header), secret, now }).id).to.equal("evt_01");
    expect(failure(() => verifyWebhook({ payload: body, headers: headersFor(`t=${now},v1=${previous},v1=${"0".repeat(64)}`), secret, now }))).to.equal(
      "signature_mismatch",
    );
  });

  it("rejects a missing or empty Svc-Signature header with missing_signature", () => {
    expect(failure(() => verifyWebhook({ payload: body, headers: { "svc-timestamp": String(now) }, secret, now }))).to.equal("missing_signature");
    expect(failure(() => verifyWebhook({ payload: body, headers: { "svc-signature": "  " }, secret, now }))).to.equal("missing_signature");
    expect(failure(() => verifyWebhook({ payload: body, headers: new Headers(), secret, now }))).to.equal("missing_signature");
  });

  it("rejects malformed headers with malformed_signature", () => {
    const v1 = signWebhookPayload(secret, now, body).split(",v1=")[1]!;
    for (const header of ["garbage", `v1=${v1}`, `t=${now}`, `t=abc,v1=${v1}`, `t=${now},t=${now + 1},v1=${v1}`, `t=-5,v1=${v1}`]) {
      expect(failure(() => verifyWebhook({ payload: body, headers: headersFor(header), secret, now })), header).to.equal("malformed_signature");
    }
    // A Svc-Timestamp that contradicts the signed t.
    const mismatched = headersFor(signWebhookPayload(secret, now, body), now - 10);
    expect(failure(() => verifyWebhook({ payload: body, headers: mismatched, secret, now }))).to.equal("malformed_signature");
  });

  it("treats a v1 entry of the wrong length or alphabet as not matching", () => {
    const v1 = signWebhookPayload(secret, now, body).split(",v1=")[1]!;
    for (const candidate of [v1.slice(0, 62), `${v1}00`, `${v1.slice(0, 63)}g`]) {
      expect(failure(() => verifyWebhook({ payload: body, headers: headersFor(`t=${now},v1=${candidate}`), secret, now }))).to.equal("signature_mismatch");
    }
  });

  it("rejects a correctly signed body that is not an event with invalid_payload", () => {
    for (const payload of ["not json", "[1,2]", '{"type":"message.sent"}']) {
      const headers = headersFor(signWebhookPayload(secret, now, payload));
      expect(failure(() => verifyWebhook({ payload, headers, secret, now }))).to.equal("invalid_payload");
    }
  });

  it("uses the clock when now is not given", () => {
    const t = Math.floor(Date.now() / 1000);
    expect(verifyWebhook({ payload: body, headers: headersFor(signWebhookPayload(secret, t, body)), secret }).id).to.equal("evt_01");
  });
});
