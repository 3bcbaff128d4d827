import { expect } from "chai";
import { newId } from "../server/ids.js";

describe("ids", () => {
  it("sort in the order they were made, also within one millisecond", () => {
    const ms = Date.UTC(2026, 10, 24, 12, 0, 0, 123);
    const ids = Array.from({ length: 1000 }, () => newId("evt", ms));
    expect(new Set(ids).size).to.equal(1000);
    expect([...ids].sort()).to.deep.equal(ids);
    const later = newId("evt", ms + 1);
    expect(later > ids.at(-1)!).to.equal(true);
  });

  it("start each millisecond at a fresh random point, with the time first", () => {
    const a = newId("msg", 1000);
    const b = newId("msg", 2000);
    expect(a).to.match(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(a.slice(4, 14)).to.equal("00000000Z8");
    expect(b.slice(4, 14)).to.equal("00000001YG");
    // 80 random bits: two fresh starts practically never land within 1000 of each other.
    expect(a.slice(14)).to.not.equal(b.slice(14));
  });
});
