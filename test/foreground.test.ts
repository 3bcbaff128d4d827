// The process's foreground signal (server/foreground.ts): what waits on it waits while foreground
// work runs, never longer than it says, and not past its stop signal.
import { expect } from "chai";
import { Foreground } from "../server/foreground.js";

/** Resolves when `settled` resolves, with the milliseconds it took. */
async function timed(p: Promise<void>): Promise<number> {
  const start = performance.now();
  await p;
  return performance.now() - start;
}

describe("foreground work", () => {
  it("lets a waiter through at once when nothing runs", async () => {
    expect(await timed(new Foreground().settled(10_000))).to.be.below(50);
  });

  it("holds a waiter until the last of overlapping foreground runs has ended", async () => {
    const fg = new Foreground();
    let endFirst!: () => void;
    let endSecond!: () => void;
    const first = fg.during(() => new Promise<void>((r) => (endFirst = r)));
    const second = fg.during(() => new Promise<void>((r) => (endSecond = r)));
    let settled = false;
    const waiting = fg.settled(10_000).then(() => (settled = true));
    endFirst();
    await first;
    await new Promise((r) => setTimeout(r, 30));
    expect(settled, "one run still going").to.equal(false);
    endSecond();
    await second;
    await waiting;
    expect(settled).to.equal(true);
  });

  it("holds a waiter no longer than its limit, and not past its signal", async () => {
    const fg = new Foreground();
    let end!: () => void;
    const run = fg.during(() => new Promise<void>((r) => (end = r)));
    const waited = await timed(fg.settled(200));
    expect(waited).to.be.at.least(190).and.below(2_000);
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 50);
    expect(await timed(fg.settled(10_000, stop.signal))).to.be.below(2_000);
    expect(await timed(fg.settled(10_000, stop.signal)), "an aborted signal: at once").to.be.below(50);
    end();
    await run;
  });

  it("passes on the work's result and its error, and ends the run either way", async () => {
    const fg = new Foreground();
    expect(await fg.during(async () => 42)).to.equal(42);
    const failed = await fg.during(async () => Promise.reject(new Error("boom"))).catch((err: Error) => err.message);
    expect(failed).to.equal("boom");
    expect(await timed(fg.settled(10_000))).to.be.below(50);
  });
});
