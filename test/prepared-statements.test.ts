// The statements of the send path (accepting, handing off, applying reports) run as named prepared
// statements (server/db/prepared.ts): each pooled connection plans one once. PostgreSQL refuses to
// run such a statement again once its result would change shape, as a `SELECT c.*` does when a
// migration adds a column to the table: in a rolling upgrade a newer process migrates while the
// older ones keep their pooled connections. Those statements name their columns instead
// (connectionColumns), and messages keep going out across such a migration.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const ADDED = "added_by_a_later_migration";

describe("prepared statements across a migration that adds a column", () => {
  after(async () => {
    await testEnv().gateway.ctx.db.query(`ALTER TABLE connections DROP COLUMN IF EXISTS ${ADDED}`);
  });

  it("accepts, hands off and applies the reports of messages sent after a column is added to connections", async function () {
    this.timeout(90_000);
    const ws = await newWorkspace();
    const key = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
    const slug = `p-${randomBytes(3).toString("hex")}`;
    await pairConnection(key.client, slug, uniquePhone());
    const headers = { authorization: `Bearer ${key.key}` };

    /** Sends one text and waits until the sandbox has reported it read: every statement of the path ran. */
    const sendUntilRead = async (text: string) => {
      const res = await http("POST", "/v1/messages/text", { body: { connection: slug, to: uniquePhone(), body: text }, headers });
      expect(res.status, JSON.stringify(res.json)).to.equal(202);
      const id = res.json.id as string;
      const last = await waitFor(
        () => http("GET", `/v1/messages/${id}`, { headers }),
        (r) => r.json.status === "read" || r.json.status === "failed",
        20_000,
      ).catch(() => http("GET", `/v1/messages/${id}`, { headers }));
      return last.json.status as string;
    };

    // One at a time: the pool hands its most recently used connections out first, so the sends
    // after the migration run statements the sends before it prepared. That holds for the
    // dispatcher's (with `c.*` in handoff-mark-submitting the messages stay `queued` and this
    // fails); the receipts' transaction may take a connection of its own, so that part is not
    // pinned down here.
    for (let i = 0; i < 3; i++) expect(await sendUntilRead(`before ${i}`)).to.equal("read");
    await testEnv().gateway.ctx.db.query(`ALTER TABLE connections ADD COLUMN ${ADDED} text`);
    for (let i = 0; i < 3; i++) expect(await sendUntilRead(`after ${i}`)).to.equal("read");
  });
});
