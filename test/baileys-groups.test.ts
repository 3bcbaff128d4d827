// Groups on the Baileys engine, driven through the stand-in socket: the send path reads a group's
// metadata from the gateway's cache (PostgreSQL), so many sends to one group ask the network once.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { newWorkspace, type Client } from "./support/actors.js";
import { liveSocket, pairBaileys } from "./support/baileys.js";
import { uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

describe("Baileys engine: groups (stand-in socket)", function () {
  this.timeout(120_000);
  let client: Client;

  before(async () => {
    const ws = await newWorkspace("pro");
    client = (await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"])).client;
  });

  it("makes at most one metadata request to the network for 100 sends to one group, and caches its answer", async () => {
    const slug = `bly-grp-${randomBytes(3).toString("hex")}`;
    const phone = uniquePhone("+1559");
    const { connection } = await pairBaileys(client, slug, phone);
    const socket = await liveSocket(connection.id, (s) => s.user !== undefined);
    const group = `120363${String(randomBytes(5).readUIntBE(0, 5)).padStart(12, "0")}@g.us`;

    const sent = await Promise.all(
      Array.from({ length: 100 }, (_, i) => expectOk(client.messages.send({ body: { connection: slug, to: { group }, body: `shift ${i}` } }))),
    );
    await waitFor(
      async () => socket.calls.filter((c) => c.method === "sendMessage" && c.args[0] === group).length,
      (n) => n === 100,
      90_000,
    );
    expect(sent).to.have.length(100);
    expect(socket.calls.filter((c) => c.method === "groupMetadata"), "metadata requests").to.have.length.at.most(1);
    // The answer was reported and cached: the group's page reads it with no request either.
    const cached = await waitFor(
      async () => (await testEnv().gateway.ctx.db.query(`SELECT subject, participants FROM group_metadata WHERE connection_id = $1 AND group_id = $2`, [connection.id, group]))[0],
      (row) => row !== undefined,
    );
    // The stand-in network answers with one LID participant.
    expect(cached.subject).to.equal("stand-in group");
    expect(cached.participants).to.deep.equal([{ phone: null, lid: `${group.split("@")[0]}1@lid`, role: "member" }]);
  });
});
