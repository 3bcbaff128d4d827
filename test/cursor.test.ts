// The cursor codec (server/http/cursor.ts): opaque, signed, bound to its listing's filters,
// exact to the microsecond, and short enough for the 200-character query limit.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import fc from "fast-check";
import { ApiError } from "../server/http/errors.js";
import { cursorKey, decodeCursor, encodeCursor, filterFingerprint, isoToMicros, microsToIso } from "../server/http/cursor.js";

const key = cursorKey(randomBytes(32));
const fp = filterFingerprint("messages:wsp_1", { status: "sent" });
const position = { created_at: "2024-11-22T10:00:00.123456Z", id: "msg_01JD3Z6G8Q6M7V2N4P5R6S7T8V" };

function expectInvalid(fn: () => unknown, message = /^invalid cursor/): ApiError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, "expected a rejected cursor").to.be.instanceOf(ApiError);
  const err = caught as ApiError;
  expect(err.code).to.equal("validation_failed");
  expect(err.status).to.equal(400);
  expect(err.message).to.match(message);
  expect(err.extra.errors?.[0]?.path).to.equal("query.cursor");
  return err;
}

describe("cursor codec", () => {
  it("round-trips a position exactly, microseconds included", () => {
    const cursor = encodeCursor(key, position, fp);
    expect(decodeCursor(key, cursor, fp)).to.deep.equal(position);
  });

  it("is opaque: base64url, neither the id nor the time readable in it", () => {
    const cursor = encodeCursor(key, position, fp);
    expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
    expect(cursor).not.to.include("msg_");
    expect(cursor).not.to.include("2024");
  });

  it("stays under the 200-character query limit with a 64-character id", () => {
    const cursor = encodeCursor(key, { created_at: "9999-12-31T23:59:59.999999Z", id: "x".repeat(64) }, fp);
    expect(cursor.length).to.be.lessThan(200);
    expect(cursor.length).to.equal(130);
  });

  it("refuses to encode what it could not decode", () => {
    expect(() => encodeCursor(key, { created_at: "2024-11-22 10:00:00", id: "a" }, fp)).to.throw(/created_at/);
    expect(() => encodeCursor(key, { created_at: position.created_at, id: "" }, fp)).to.throw(/id/);
    expect(() => encodeCursor(key, { created_at: position.created_at, id: "x".repeat(65) }, fp)).to.throw(/id/);
  });

  it("pads millisecond instants to microseconds", () => {
    const cursor = encodeCursor(key, { created_at: "2024-11-22T10:00:00.123Z", id: "a" }, fp);
    expect(decodeCursor(key, cursor, fp).created_at).to.equal("2024-11-22T10:00:00.123000Z");
    const whole = encodeCursor(key, { created_at: "2024-11-22T10:00:00Z", id: "a" }, fp);
    expect(decodeCursor(key, whole, fp).created_at).to.equal("2024-11-22T10:00:00.000000Z");
  });

  it("rejects a cursor issued for other filters, saying so", () => {
    const cursor = encodeCursor(key, position, fp);
    expectInvalid(() => decodeCursor(key, cursor, filterFingerprint("messages:wsp_1", { status: "read" })), /other filters/);
    expectInvalid(() => decodeCursor(key, cursor, filterFingerprint("messages:wsp_1", {})), /other filters/);
    // Another workspace is another listing.
    expectInvalid(() => decodeCursor(key, cursor, filterFingerprint("messages:wsp_2", { status: "sent" })), /other filters/);
  });

  it("rejects a cursor signed with another key", () => {
    const cursor = encodeCursor(cursorKey(randomBytes(32)), position, fp);
    expectInvalid(() => decodeCursor(key, cursor, fp), /^invalid cursor$/);
  });

  it("rejects malformed input", () => {
    for (const bad of ["", "!", "a b", "abc", "x".repeat(199), "====", encodeCursor(key, position, fp) + "="]) {
      expectInvalid(() => decodeCursor(key, bad, fp));
    }
  });

  it("rejects every single-character change and every truncation (property)", () => {
    const cursor = encodeCursor(key, position, fp);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    fc.assert(
      fc.property(fc.nat(cursor.length - 1), fc.constantFrom(...alphabet), (at, replacement) => {
        fc.pre(cursor[at] !== replacement);
        const tampered = cursor.slice(0, at) + replacement + cursor.slice(at + 1);
        expectInvalid(() => decodeCursor(key, tampered, fp));
      }),
      { numRuns: 500 },
    );
    for (let length = 0; length < cursor.length; length++) expectInvalid(() => decodeCursor(key, cursor.slice(0, length), fp));
  });

  it("round-trips any instant and id (property)", () => {
    const micros = fc.bigInt({ min: 0n, max: 253402300799999999n }); // 1970 … 9999-12-31T23:59:59.999999Z
    const id = fc.string({ unit: fc.constantFrom(..."0123456789ABCDEFGHJKMNPQRSTVWXYZ_msgcon"), minLength: 1, maxLength: 64 });
    fc.assert(
      fc.property(micros, id, fc.string(), (us, id, filters) => {
        const created_at = microsToIso(us);
        expect(isoToMicros(created_at)).to.equal(us);
        const f = filterFingerprint("messages:w", { status: filters });
        const cursor = encodeCursor(key, { created_at, id }, f);
        expect(cursor.length).to.be.at.most(130);
        expect(decodeCursor(key, cursor, f)).to.deep.equal({ created_at, id });
      }),
      { numRuns: 300 },
    );
  });

  it("fingerprints filters independently of key order, leaving undefined ones out", () => {
    expect(filterFingerprint("s", { a: "1", b: "2" })).to.equal(filterFingerprint("s", { b: "2", a: "1" }));
    expect(filterFingerprint("s", { a: undefined })).to.equal(filterFingerprint("s", {}));
    expect(filterFingerprint("s", { a: "1" })).not.to.equal(filterFingerprint("s", { a: "2" }));
    expect(filterFingerprint("s", { a: "1" })).not.to.equal(filterFingerprint("t", { a: "1" }));
  });
});
