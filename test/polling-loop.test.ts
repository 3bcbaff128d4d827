// A polling loop woken by NOTIFY: while the LISTEN connection is up it does not poll (only a long
// fallback), a NOTIFY on its channel runs a turn at once, and once the connection is lost it polls
// at its short interval again. Without a listener (the embedded database) it polls as before. A loop
// that knows when its next row falls due (`dueIn`) sleeps until then after an empty turn.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { DatabaseListener } from "../server/db/listener.js";
import { createLogger } from "../server/logger.js";
import { NOTIFIED_IDLE_MS, PollingLoop } from "../server/polling-loop.js";
import { testEnv } from "./setup.js";
import { waitFor } from "./support/wait.js";

const IDLE_MS = 50;
const logger = createLogger("silent");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function countingLoop(
  notifiedBy?: { listener: DatabaseListener; channel: string },
  options: { dueIn?: () => Promise<number | null>; work?: () => number } = {},
): { loop: PollingLoop; turns: () => number; at: number[] } {
  const at: number[] = [];
  const loop = new PollingLoop({
    tick: async () => {
      at.push(Date.now());
      return options.work?.() ?? 0;
    },
    full: () => false,
    idleMs: IDLE_MS,
    logger,
    errorMessage: "test loop failed",
    ...(notifiedBy ? { notifiedBy } : {}),
    ...(options.dueIn ? { dueIn: options.dueIn } : {}),
  });
  return { loop, turns: () => at.length, at };
}

async function listening(): Promise<{ listener: DatabaseListener; channel: string }> {
  const listener = new DatabaseListener(testEnv().databaseUrl, logger);
  await listener.start();
  return { listener, channel: `svc_test_${randomBytes(4).toString("hex")}` };
}

describe("polling loop woken by NOTIFY", () => {
  it("does not poll while LISTEN is up, runs a turn on each NOTIFY, and polls again once the connection is lost", async function () {
    if (testEnv().gateway.database.sharedSession) this.skip();
    const channel = `svc_test_${randomBytes(4).toString("hex")}`;
    const listener = new DatabaseListener(testEnv().databaseUrl, logger);
    const { loop, turns } = countingLoop({ listener, channel });
    await listener.start();
    loop.start();
    try {
      expect(listener.up).to.equal(true);
      // The first turn runs at start; then the loop waits for the fallback, far longer than this.
      await sleep(20 * IDLE_MS);
      const quiet = turns();
      await sleep(20 * IDLE_MS);
      expect(turns(), "turns while idle with LISTEN up").to.equal(quiet);
      expect(NOTIFIED_IDLE_MS).to.be.above(40 * IDLE_MS);

      await testEnv().gateway.ctx.db.query(`SELECT pg_notify($1, '')`, [channel]);
      await waitFor(async () => turns(), (n) => n === quiet + 1, 2_000, 10);
      await sleep(10 * IDLE_MS);
      expect(turns(), "one turn per notification").to.equal(quiet + 1);

      // Its LISTEN connection is ended by the server: the loop polls every IDLE_MS meanwhile.
      await testEnv().gateway.ctx.db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'svc-gateway listener' AND query = $1`, [
        `LISTEN ${channel}`,
      ]);
      await waitFor(async () => listener.up, (up) => !up, 5_000, 10);
      const down = turns();
      await sleep(20 * IDLE_MS);
      expect(turns() - down, "turns while LISTEN is down").to.be.at.least(5);
    } finally {
      await loop.stop();
      await listener.stop();
    }
  });

  it("sleeps after an empty turn until the row dueIn names falls due, not the fallback, and never less than idleMs", async function () {
    if (testEnv().gateway.database.sharedSession) this.skip();
    const notifiedBy = await listening();
    // The next row falls due 30 IDLE_MS after each empty turn; then none (null), then one overdue.
    const answers: (number | null)[] = [30 * IDLE_MS, null, -5_000];
    const { loop, turns, at } = countingLoop(notifiedBy, { dueIn: async () => (answers.length ? answers.shift()! : null) });
    loop.start();
    try {
      await waitFor(async () => turns(), (n) => n >= 2, 5_000, 10);
      const gap = at[1]! - at[0]!;
      expect(gap, "woken when the row falls due").to.be.within(30 * IDLE_MS - 5, 30 * IDLE_MS + 500);
      // null: nothing is queued, so only a notification (or the fallback) starts the next turn.
      await sleep(20 * IDLE_MS);
      expect(turns(), "no turn while nothing is due").to.equal(2);
      await testEnv().gateway.ctx.db.query(`SELECT pg_notify($1, '')`, [notifiedBy.channel]);
      await waitFor(async () => turns(), (n) => n >= 4, 2_000, 10);
      // An overdue row that the turn could not take (locked elsewhere) is looked at again after idleMs, not at once.
      expect(at[3]! - at[2]!, "overdue: idleMs").to.be.within(IDLE_MS - 5, 10 * IDLE_MS);
    } finally {
      await loop.stop();
      await notifiedBy.listener.stop();
    }
  });

  it("looks again after idleMs when a turn did work, without asking dueIn", async function () {
    if (testEnv().gateway.database.sharedSession) this.skip();
    const notifiedBy = await listening();
    let asked = 0;
    let work = 3;
    const { loop, turns } = countingLoop(notifiedBy, { dueIn: async () => (asked++, null), work: () => (work > 0 ? work-- : 0) });
    loop.start();
    try {
      // Three turns with work, each followed by another within idleMs, then an empty one that asks.
      await waitFor(async () => turns(), (n) => n >= 4, 2_000, 10);
      await sleep(20 * IDLE_MS);
      expect(turns()).to.equal(4);
      expect(asked, "asked after the empty turn only").to.equal(1);
    } finally {
      await loop.stop();
      await notifiedBy.listener.stop();
    }
  });

  it("polls every idleMs without a listener (the embedded database)", async () => {
    const listener = new DatabaseListener(null, logger);
    const { loop, turns } = countingLoop({ listener, channel: "svc_test_none" });
    await listener.start();
    loop.start();
    try {
      await sleep(20 * IDLE_MS);
      expect(turns()).to.be.at.least(5);
    } finally {
      await loop.stop();
      await listener.stop();
    }
  });
});
