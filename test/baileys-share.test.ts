// Baileys sockets shared out fairly between gateway processes (child processes on the test
// database, each with the stand-in socket, which writes every socket's open and end to a shared
// log): one process takes every connection; a second and a third take their share from it (none
// above ceil(connections / processes)); a killed one's share is taken over by the others; and no
// number ever has two sockets open at once, as the stand-in saw it.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { baileysEngine, onlyTheseBaileysConnections, pairBaileys } from "./support/baileys.js";
import { CHILD_READY_MS, startChildGateway, type ChildGateway } from "./support/child-gateway.js";
import { uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

interface Entry {
  pid: number;
  at: number;
  event: "open" | "send" | "end" | "closed";
  connection: string;
}

const CONNECTIONS = 12;
/** Lease polls every second: the shares settle within a few. */
const FAST = { BAILEYS_LEASE_SECONDS: "4", LOG_LEVEL: "warn" };

describe("Baileys sockets shared fairly between gateway processes", function () {
  this.timeout(4 * CHILD_READY_MS + 4 * 60_000);
  const children: ChildGateway[] = [];
  let ids: string[] = [];

  before(async function () {
    // Several processes on one database: PostgreSQL only (the embedded database has one owner).
    if (testEnv().gateway.database.sharedSession) this.skip();
    const ws = await newWorkspace("enterprise");
    const { client } = await ws.key(["connections:read", "connections:write"]);
    for (let i = 0; i < CONNECTIONS; i++) {
      const { connection } = await pairBaileys(client, `share-${randomBytes(3).toString("hex")}`, uniquePhone("+1553"));
      ids.push(connection.id);
    }
    // The test gateway steps aside: its engine closes its sockets, hands their leases back and is no longer counted.
    await baileysEngine().close();
    await onlyTheseBaileysConnections(ids);
  });
  after(async () => {
    for (const child of children.splice(0)) if (child.process.exitCode === null && child.process.signalCode === null) await child.terminate();
    if (!testEnv().gateway.database.sharedSession) await baileysEngine().open();
    ids = [];
  });

  it("gives each process its share, hands the surplus back without two sockets for one number, and takes a killed one's share over", async () => {
    const log = join(mkdtempSync(join(tmpdir(), "svc-standin-")), "log");
    const entries = (): Entry[] =>
      existsSync(log)
        ? readFileSync(log, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Entry)
            .filter((e) => ids.includes(e.connection))
        : [];
    /** Live leases of our connections per process id. */
    const holders = async (): Promise<Map<number, number>> => {
      const found = (await testEnv().gateway.ctx.db.query(`SELECT holder FROM baileys_leases WHERE connection_id = ANY($1) AND expires_at > now()`, [ids])) as { holder: string }[];
      const counts = new Map<number, number>();
      for (const { holder } of found) counts.set(Number(holder.split(":")[1]), (counts.get(Number(holder.split(":")[1])) ?? 0) + 1);
      return counts;
    };
    const settled = (pids: number[], each: number) => async () => {
      const counts = await holders();
      return pids.every((pid) => counts.get(pid) === each) ? counts : null;
    };

    const a = await startChildGateway({ ...FAST, STAND_IN_LOG: log });
    children.push(a);
    await waitFor(settled([a.process.pid!], CONNECTIONS), (c) => c !== null, 30_000, 200);

    const b = await startChildGateway({ ...FAST, STAND_IN_LOG: log });
    children.push(b);
    await waitFor(settled([a.process.pid!, b.process.pid!], CONNECTIONS / 2), (c) => c !== null, 60_000, 200);

    // A third: its share (ceil(12 / 3) = 4, a third of them) within a minute of its start, taken from the other two.
    const started = Date.now();
    const c = await startChildGateway({ ...FAST, STAND_IN_LOG: log });
    children.push(c);
    await waitFor(settled([a.process.pid!, b.process.pid!, c.process.pid!], CONNECTIONS / 3), (x) => x !== null, 60_000, 200);
    expect(Date.now() - started, "the third process's share taken").to.be.below(60_000 + CHILD_READY_MS);

    // Killed: its sockets die with it; its leases lapse and the other two take them up.
    await c.kill();
    const killedAt = Date.now();
    await waitFor(settled([a.process.pid!, b.process.pid!], CONNECTIONS / 2), (x) => x !== null, 60_000, 200);

    // Never two sockets at once for one number, as the stand-in saw them: each socket is open from
    // its `open` to its `end` (or to the kill of its process).
    for (const id of ids) {
      const open = new Map<number, number>();
      const intervals: { from: number; to: number; pid: number }[] = [];
      for (const e of entries().filter((x) => x.connection === id)) {
        if (e.event === "open") open.set(e.pid, e.at);
        if (e.event === "end" && open.has(e.pid)) {
          intervals.push({ from: open.get(e.pid)!, to: e.at, pid: e.pid });
          open.delete(e.pid);
        }
      }
      for (const [pid, from] of open) intervals.push({ from, to: pid === c.process.pid ? killedAt : Infinity, pid });
      intervals.sort((x, y) => x.from - y.from);
      for (let i = 1; i < intervals.length; i++) {
        expect(intervals[i]!.from, `connection ${id}: a socket opened by ${intervals[i]!.pid} while ${intervals[i - 1]!.pid}'s was open`).to.be.at.least(intervals[i - 1]!.to);
      }
      // Hand-backs happened: the sockets moved between processes.
    }
    const movedTo = new Set(entries().filter((e) => e.event === "open").map((e) => e.pid));
    expect([...movedTo].sort()).to.deep.equal([a.process.pid, b.process.pid, c.process.pid].sort());
  });
});
