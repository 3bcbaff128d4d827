// The daily cap of failed sign-in verifications per address (server/auth/sign-in.ts): 20 a UTC
// day, then the live code is dropped and new codes come one an hour with one attempt each. Every
// failure stays the same 401; the owner, who receives the codes, still signs in.
import { expect } from "chai";
import { pruneJob } from "../jobs/prune.js";
import { DAILY_FAILED_VERIFIES } from "../server/auth/sign-in.js";
import { testEnv } from "./setup.js";
import { clientAddress, http, newWorkspace, uniqueEmail } from "./support/actors.js";

const requestCode = (email: string) => http("POST", "/v1/auth/request-code", { body: { email }, headers: { "x-forwarded-for": clientAddress() } });
const verify = (email: string, code: string) => http("POST", "/v1/auth/verify", { body: { email, code }, headers: { "x-forwarded-for": clientAddress() } });

async function freshCode(email: string): Promise<string> {
  const since = testEnv().mailbox.mails.length;
  expect((await requestCode(email)).status).to.equal(202);
  const [, code] = await testEnv().mailbox.waitFor(email, /sign-in code is (\d{6})/, since);
  return code!;
}

/** `n` wrong verifications, each the uniform 401. */
async function fail(email: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await verify(email, "000000");
    expect(res.status).to.equal(401);
  }
}

/** A code that is surely not `code`. */
const wrong = (code: string) => (code === "111111" ? "222222" : "111111");

describe("sign-in guessing", function () {
  this.timeout(60_000);

  it("keeps 19 failures of a day harmless: the owner's code still works", async () => {
    const ws = await newWorkspace();
    await fail(ws.owner.email, DAILY_FAILED_VERIFIES - 1);
    const code = await freshCode(ws.owner.email);
    expect((await verify(ws.owner.email, code)).status).to.equal(200);
  });

  it("drops the live code at the 20th failure: its right value is then the same 401", async () => {
    const ws = await newWorkspace();
    await fail(ws.owner.email, DAILY_FAILED_VERIFIES - 1);
    const code = await freshCode(ws.owner.email);
    const twentieth = await verify(ws.owner.email, wrong(code));
    const after = await verify(ws.owner.email, code);
    expect(after.status).to.equal(401);
    expect(after.json.detail).to.equal(twentieth.json.detail);
  });

  it("once locked, gives one code an hour with one attempt: the owner signs in, a guesser gets one try", async () => {
    const ws = await newWorkspace();
    await fail(ws.owner.email, DAILY_FAILED_VERIFIES);
    const guessed = await freshCode(ws.owner.email);
    expect((await verify(ws.owner.email, wrong(guessed))).status).to.equal(401);
    expect((await verify(ws.owner.email, guessed)).status).to.equal(401); // its one attempt is spent
    const again = await requestCode(ws.owner.email);
    expect(again.status).to.equal(429);
    expect(Number(again.headers.get("retry-after"))).to.be.within(1, 3600);

    const other = await newWorkspace();
    await fail(other.owner.email, DAILY_FAILED_VERIFIES);
    const code = await freshCode(other.owner.email);
    expect((await verify(other.owner.email, code)).status).to.equal(200);
  });

  it("locks an address without an account the same way, so the lock tells nothing about accounts", async () => {
    const stranger = uniqueEmail("stranger");
    await fail(stranger, DAILY_FAILED_VERIFIES);
    expect((await requestCode(stranger)).status).to.equal(202);
    expect((await requestCode(stranger)).status).to.equal(429);
  });

  it("forgets windows that began over a day ago in the hourly prune job, and keeps today's", async () => {
    const { db } = testEnv().gateway.ctx;
    const bucket = `prune-test:${uniqueEmail("prune")}`;
    await db.query(
      `INSERT INTO rate_limits (bucket, window_start, hits) VALUES ($1, now() - interval '25 hours', 3), ($1, now() - interval '23 hours', 2)`,
      [bucket],
    );
    await pruneJob(db, 30).run(undefined);
    const left: { hits: number }[] = await db.query(`SELECT hits FROM rate_limits WHERE bucket = $1 ORDER BY window_start`, [bucket]);
    expect(left.map((r) => r.hits)).to.deep.equal([2]);
  });
});
