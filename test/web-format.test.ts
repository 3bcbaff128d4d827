// The dashboard's number writing (web/src/format.ts), without a browser: counts with thousands
// separators, and currency units to micros and back, exact up to the API's largest amount.
import { expect } from "chai";
import fc from "fast-check";
import { MAX_SAFE_INT } from "../contract/common.js";
import { formatCount, formatUnits, parseUnits, unitsInputValue } from "../web/src/format.js";

describe("dashboard: numbers", () => {
  it("writes counts with thousands separators", () => {
    expect([0, 999, 1000, 1234567, 100000].map(formatCount)).to.deep.equal(["0", "999", "1,000", "1,234,567", "100,000"]);
  });

  it("reads currency units as micros at the limits: 0 and the largest amount, not one micro past it nor a seventh decimal", () => {
    expect(parseUnits("0", MAX_SAFE_INT)).to.deep.equal({ ok: true, micros: 0 });
    expect(parseUnits("0.000001", MAX_SAFE_INT)).to.deep.equal({ ok: true, micros: 1 });
    expect(parseUnits("2.50", MAX_SAFE_INT)).to.deep.equal({ ok: true, micros: 2_500_000 });
    expect(parseUnits(" 1,234.5 ", MAX_SAFE_INT)).to.deep.equal({ ok: true, micros: 1_234_500_000 });
    expect(parseUnits(".5", MAX_SAFE_INT)).to.deep.equal({ ok: true, micros: 500_000 });
    expect(parseUnits("9007199254.740991", MAX_SAFE_INT)).to.deep.equal({ ok: true, micros: MAX_SAFE_INT });
    expect(parseUnits("9007199254.740992", MAX_SAFE_INT)).to.deep.equal({ ok: false, message: "At most 9,007,199,254.740991" });
    expect(parseUnits("99999999999999999999", MAX_SAFE_INT)).to.include({ ok: false });
    expect(parseUnits("10.000001", 10_000_000)).to.include({ ok: false, message: "At most 10" });
    expect(parseUnits("10", 10_000_000)).to.deep.equal({ ok: true, micros: 10_000_000 });
    for (const refused of ["-0.000001", "0.0000001", "", ".", "1.2.3", "1e3", "abc", "2,50 €"]) {
      expect(parseUnits(refused, MAX_SAFE_INT).ok, refused).to.equal(false);
    }
  });

  it("writes micros as currency units at the limits, and reads back what it wrote for every amount", () => {
    expect([0, 1, 2_500_000, MAX_SAFE_INT].map(unitsInputValue)).to.deep.equal(["0", "0.000001", "2.5", "9007199254.740991"]);
    expect([0, 1, 1_234_567_890, MAX_SAFE_INT].map(formatUnits)).to.deep.equal(["0", "0.000001", "1,234.56789", "9,007,199,254.740991"]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_SAFE_INT }), (micros) => {
        expect(parseUnits(unitsInputValue(micros), MAX_SAFE_INT)).to.deep.equal({ ok: true, micros });
        expect(parseUnits(formatUnits(micros), MAX_SAFE_INT)).to.deep.equal({ ok: true, micros });
      }),
    );
  });
});
