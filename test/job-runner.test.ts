// The job runner (jobs/runner.ts) on the run's database, through a TCP proxy that holds back one
// answer of the database: a process that stops while a lock it asked for is on its way gives that
// job back, so another process runs it at once rather than after its lock lifetime.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { JobRunner } from "../jobs/runner.js";
import { createLogger } from "../server/logger.js";
import { testEnv } from "./setup.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { waitFor } from "./support/wait.js";

/** Longer than the test: a job left locked would not run again within it. */
const LOCK_LIFETIME_MS = 10 * 60_000;
/** Agenda's statement that finds the next due job and locks it (its backend's SQL). */
const LOCK_STATEMENT = "SET locked_at = $1";

describe("job runner", function () {
  this.timeout(60_000);

  it("gives back a job whose lock landed after it stopped: another process runs it at once, not after its lock lifetime", async function () {
    // Agenda's table read in SQL, and the proxy speaks PostgreSQL: not on the MongoDB-wire emulator.
    if (testEnv().jobsMongoUrl) this.skip();
    const databaseUrl = testEnv().databaseUrl;
    const db = testEnv().gateway.ctx.db;
    const name = `test.lock-landing.${randomBytes(4).toString("hex")}`;
    const ran: string[] = [];
    const proxy = await TcpProxy.inFrontOf(databaseUrl);
    // No notification channel and no poll but the first: the only lock is the one held back below.
    const stopping = await JobRunner.create({ databaseUrl: proxy.urlFor(databaseUrl), embedded: true, processEveryMs: 3_600_000, logger: createLogger("silent") });
    let other: JobRunner | undefined;
    try {
      stopping.define({ name, lockLifetimeMs: LOCK_LIFETIME_MS, run: async () => void ran.push("stopping") });
      await stopping.agenda.now(name, {});
      const held = proxy.holdAnswerTo(LOCK_STATEMENT);
      await stopping.start();
      await held.answered;
      const lockedAt = async () => ((await db.query(`SELECT locked_at FROM agenda_jobs WHERE name = $1`, [name])) as { locked_at: Date | null }[])[0]?.locked_at;
      expect(await lockedAt()).to.be.instanceOf(Date);

      // It stops with the lock's answer still on its way, then the answer lands.
      const stopped = stopping.pause();
      held.release();
      await stopped;
      expect(await lockedAt()).to.equal(null);
      expect(ran).to.deep.equal([]);

      other = await JobRunner.create({ databaseUrl, embedded: true, processEveryMs: 200, logger: createLogger("silent") });
      other.define({ name, lockLifetimeMs: LOCK_LIFETIME_MS, run: async () => void ran.push("other") });
      await other.start();
      await waitFor(async () => ran, (r) => r.length > 0, 30_000);
      expect(ran).to.deep.equal(["other"]);
    } finally {
      await stopping.stop();
      await other?.stop();
      await proxy.cut();
      await db.query(`DELETE FROM agenda_jobs WHERE name = $1`, [name]);
    }
  });
});
