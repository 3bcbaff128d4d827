// The raw-text JSON check (server/http/json-body.ts) must never refuse what JSON.stringify writes
// (no duplicate keys, shallow), whatever the strings hold: quotes, backslashes, escapes, braces.
import { expect } from "chai";
import fc from "fast-check";
import { checkJsonStructure, MAX_JSON_DEPTH, parseJsonBody } from "../server/http/json-body.js";

describe("JSON body check (property)", () => {
  it("accepts every document JSON.stringify writes, and parses it to the same value", () => {
    const tricky = fc.oneof(fc.string(), fc.constantFrom('"', "\\", '\\"', "{", "}", "[", "]", ",", ":", '\\\\"', "\u2028"));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, tricky, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie("node")), fc.dictionary(tricky, tie("node"))),
    })).node;
    fc.assert(
      fc.property(fc.oneof(fc.array(value), fc.dictionary(tricky, value)), (v) => {
        const text = JSON.stringify(v);
        expect(checkJsonStructure(text), text).to.equal(null);
        expect(parseJsonBody(Buffer.from(text))).to.deep.equal(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it("finds a duplicate key however deep, and depth exactly at the bound", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_JSON_DEPTH - 1 }), fc.string(), (depth, key) => {
        const inner = `{${JSON.stringify(key)}:1,${JSON.stringify(key)}:2}`;
        const text = "[".repeat(depth - 1) + inner + "]".repeat(depth - 1);
        expect(checkJsonStructure(text)?.message).to.match(/duplicate key/);
      }),
    );
    expect(checkJsonStructure("[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH))).to.equal(null);
    expect(checkJsonStructure("[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1))?.message).to.match(/deeper than 64/);
  });

  it("refuses a body with a duplicate key however deep, spelt alike or with an escape, and one past the depth bound", () => {
    const refusal = (text: string) => {
      try {
        parseJsonBody(Buffer.from(text));
        return null;
      } catch (err) {
        return (err as { extra?: { errors?: { message: string }[] } }).extra?.errors?.[0]?.message ?? String(err);
      }
    };
    fc.assert(
      // The object nests two levels more (its "pad"), within the bound.
      fc.property(fc.integer({ min: 1, max: MAX_JSON_DEPTH - 2 }), fc.string({ minLength: 1 }), fc.boolean(), (depth, key, escaped) => {
        const again = escaped ? `"${[...key].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"` : JSON.stringify(key);
        const inner = `{"pad":[{}],${JSON.stringify(key)}:1,"x":{"y":2},${again}:2}`;
        const text = "[".repeat(depth - 1) + inner + "]".repeat(depth - 1);
        expect(refusal(text), text).to.match(/duplicate key/);
      }),
    );
    expect(refusal("[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH))).to.equal(null);
    expect(refusal("[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1))).to.match(/deeper than 64/);
    // The same key in two objects is no duplicate.
    expect(refusal(`{"a":{"k":1},"b":{"k":2}}`)).to.equal(null);
  });
});
