// Resolved API keys are kept in memory per process (server/auth/key-cache.ts). These tests change
// what a key resolves to in every way the cache must notice: through this process's services
// (refused on the very next request), and behind its back with SQL on a connection of its own, as
// another gateway process or an operator would (refused as soon as the notification arrives),
// including while the cache's LISTEN connection is down.
import { expect } from "chai";
import pg from "pg";
import { testEnv } from "./setup.js";
import { fromDashboard, http, newWorkspace } from "./support/actors.js";
import { waitFor } from "./support/wait.js";

/** SQL from outside the gateway process's own pool. */
async function elsewhere(sql: string, params: unknown[] = []): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: testEnv().databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const status = async (key: string): Promise<number> => (await http("GET", "/v1/whoami", { headers: { authorization: `Bearer ${key}` } })).status;
/** Creating a schedule needs a plan with scheduling: 402 without it, else 400 for the empty body. */
const createSchedule = async (key: string): Promise<number> =>
  (await http("POST", "/v1/schedules", { headers: { authorization: `Bearer ${key}` }, body: {} })).status;

describe("API key cache", () => {
  it("refuses a key revoked through the API on the very next request", async () => {
    const ws = await newWorkspace();
    const { key, id } = await ws.key(["messages:read"]);
    expect(await status(key)).to.equal(200);
    expect(await status(key)).to.equal(200);
    const revoked = await http("POST", `/v1/api-keys/${id}/revoke`, { headers: fromDashboard(ws.owner.cookie) });
    expect(revoked.status).to.equal(200);
    expect(await status(key)).to.equal(401);
  });

  it("refuses a key revoked by another process within a second", async () => {
    const ws = await newWorkspace();
    const { key, id } = await ws.key(["messages:read"]);
    expect(await status(key)).to.equal(200);
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [id]);
    expect(await waitFor(() => status(key), (s) => s === 401, 1_000, 20)).to.equal(401);
  });

  it("applies a plan change and a role change made by another process", async () => {
    const ws = await newWorkspace("pro");
    const admin = await ws.addMember("admin");
    const { key } = await ws.key(["schedules:write", "ai:write"], admin);
    expect(await createSchedule(key)).to.equal(400);
    await elsewhere(`UPDATE workspaces SET plan_id = 'free' WHERE id = $1`, [ws.id]);
    expect(await waitFor(() => createSchedule(key), (s) => s === 402, 1_000, 20)).to.equal(402);
    await elsewhere(`UPDATE workspaces SET plan_id = 'pro' WHERE id = $1`, [ws.id]);
    expect(await waitFor(() => createSchedule(key), (s) => s === 400, 1_000, 20)).to.equal(400);

    const scopes = async () => (await http("GET", "/v1/whoami", { headers: { authorization: `Bearer ${key}` } })).json as { scopes: string[] };
    expect((await scopes()).scopes).to.include("ai:write");
    await elsewhere(`UPDATE members SET role = 'developer' WHERE workspace_id = $1 AND role = 'admin'`, [ws.id]);
    const after = await waitFor(scopes, (w) => !w.scopes.includes("ai:write"), 1_000, 20);
    expect(after.scopes).to.include("schedules:write");
  });

  it("does not serve a revocation it missed while its LISTEN connection was down, and listens again", async function () {
    if (testEnv().gateway.database.embedded) this.skip(); // no cache on the embedded database
    const ws = await newWorkspace();
    const first = await ws.key(["messages:read"]);
    expect(await status(first.key)).to.equal(200);
    // Cut the process's LISTEN connection (server/db/listener.ts) and revoke at once: the notification has no one to reach.
    const [cut] = (await elsewhere(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'svc-gateway listener' AND datname = current_database()`,
    )) as { n: number }[];
    expect(cut!.n).to.equal(1);
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [first.id]);
    expect(await waitFor(() => status(first.key), (s) => s === 401, 1_000, 20)).to.equal(401);

    // Back within a couple of seconds; from then on a revocation elsewhere arrives again.
    const listeners = () => elsewhere(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'svc-gateway listener' AND datname = current_database()`);
    await waitFor(listeners, (rows) => rows.length === 1, 5_000, 100);
    const second = await ws.key(["messages:read"]);
    expect(await status(second.key)).to.equal(200);
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [second.id]);
    expect(await waitFor(() => status(second.key), (s) => s === 401, 1_000, 20)).to.equal(401);
  });
});
