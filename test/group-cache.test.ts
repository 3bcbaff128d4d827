// The group cache under concurrency: the API's own change to a group and the network's report of
// it may both find the group new and be applied at once; `group.joined` is recorded by one only,
// and the other records just what differs from what the first stored.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { EngineGroup } from "../server/engines/engine.js";
import { applyGroup } from "../server/groups/cache.js";
import { rows } from "../server/db/rows.js";
import { testEnv } from "./setup.js";
import { newWorkspace } from "./support/actors.js";
import { pairConnection, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = () => testEnv().gateway.ctx.db;

describe("group cache: concurrent reports of a new group", () => {
  it("records group.joined once when two transactions store the same new group at once", async function () {
    // The embedded database is one backend session: a transaction held open there holds every other statement.
    if (testEnv().gateway.database.embedded) this.skip();
    const ws = await newWorkspace();
    const { client } = await ws.key(["connections:read", "connections:write"]);
    const phone = uniquePhone();
    const slug = `g-${randomBytes(3).toString("hex")}`;
    await pairConnection(client, slug, phone);
    const [connection] = await rows<{ id: string; slug: string; workspaceId: string; phone: string }>(
      db(),
      `SELECT id, slug, workspace_id AS "workspaceId", phone FROM connections WHERE slug = $1 AND workspace_id = $2`,
      [slug, ws.id],
    );
    const groupId = `${randomBytes(6).toString("hex")}@g.us`;
    const group: EngineGroup = {
      id: groupId,
      subject: "Night shift",
      description: null,
      announce: false,
      locked: false,
      createdAt: new Date(),
      participants: [{ phone, lid: null, role: "superadmin" }],
    };
    const echoed: EngineGroup = { ...group, participants: [...group.participants, { phone: uniquePhone(), lid: null, role: "member" }] };

    const first = db().createQueryRunner();
    await first.connect();
    await first.startTransaction();
    await applyGroup(first.manager, connection!, groupId, group);
    // The second finds no row yet, and waits on the first's insert.
    const second = db().transaction((em) => applyGroup(em, connection!, groupId, echoed));
    await waitFor(
      () => rows<{ n: number }>(db(), `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`),
      ([r]) => r!.n > 0,
    );
    await first.commitTransaction();
    await first.release();
    await second;

    const events = await rows<{ type: string }>(db(), `SELECT type FROM events WHERE workspace_id = $1 AND type LIKE 'group.%' ORDER BY tx, id`, [ws.id]);
    expect(events.map((e) => e.type)).to.deep.equal(["group.joined", "group.participants"]);
    const [stored] = await rows<{ participants: unknown[] }>(db(), `SELECT participants FROM group_metadata WHERE connection_id = $1 AND group_id = $2`, [connection!.id, groupId]);
    expect(stored!.participants).to.have.length(2);
  });
});
