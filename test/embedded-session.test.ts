// The embedded database is one PostgreSQL session shared by every client connection: what a
// client prepares by name must stay its own, and a notification must reach the clients listening
// for it, as in sessions of their own.
import { expect } from "chai";
import pg from "pg";
import { startEmbeddedPostgres, StatementNames, type EmbeddedPostgres } from "../server/db/embedded.js";
import { waitFor } from "./support/wait.js";

/** A frontend message: its type, then its length (itself included), then its fields. */
function message(type: string, ...fields: (string | number[])[]): Uint8Array {
  const body = Buffer.concat(fields.map((f) => (typeof f === "string" ? Buffer.from(`${f}\0`) : Buffer.from(f))));
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}

/** A one-byte field. */
const byte = (c: string) => [c.charCodeAt(0)];

/** The C strings of a message's fields, after its type and length (and `skip` bytes more). */
function strings(bytes: Uint8Array, skip = 0): string[] {
  const buffer = Buffer.from(bytes);
  expect(buffer.readInt32BE(1), "the length field").to.equal(buffer.length - 1);
  return buffer.subarray(5 + skip).toString("utf8").split("\0");
}

describe("the embedded database's shared session", () => {
  describe("statement names", () => {
    it("gives each client's named statement a name of its own in Parse, Bind, and a statement's Describe and Close", () => {
      const names = new StatementNames();
      expect(strings(names.rename(1, message("P", "send", "SELECT $1", [0, 0])))[0]).to.equal("c1.send");
      expect(strings(names.rename(2, message("P", "send", "SELECT 2", [0, 0])))[0]).to.equal("c2.send");
      // Bind: the portal's name, then the statement's.
      expect(strings(names.rename(1, message("B", "", "send", [0, 0, 0, 0, 0, 0]))).slice(0, 2)).to.deep.equal(["", "c1.send"]);
      expect(strings(names.rename(2, message("D", byte("S"), "send")), 1)[0]).to.equal("c2.send");
      // A portal's Describe or Close is not a statement's.
      expect(strings(names.rename(2, message("D", byte("P"), "send")), 1)[0]).to.equal("send");
      expect(strings(names.rename(1, message("C", byte("S"), "send")), 1)[0]).to.equal("c1.send");
      // The unnamed statement and other messages pass as they came.
      const unnamed = message("P", "", "SELECT 1", [0, 0]);
      expect(names.rename(1, unnamed)).to.equal(unnamed);
      const query = message("Q", "SELECT 1");
      expect(names.rename(1, query)).to.equal(query);
      // Client 1 closed its statement: only client 2's is left to drop.
      expect(names.forget(1)).to.deep.equal([]);
      expect(names.forget(2)).to.deep.equal(["c2.send"]);
      expect(names.forget(2)).to.deep.equal([]);
    });

    it("refuses a message whose name has no end", () => {
      const cut = Buffer.from(message("P", "send")).subarray(0, 7);
      expect(() => new StatementNames().rename(1, cut)).to.throw(/unterminated/);
    });
  });

  describe("through the server", function () {
    this.timeout(60_000);
    let server: EmbeddedPostgres;
    before(async () => {
      server = await startEmbeddedPostgres(undefined);
    });
    after(() => server.stop());

    const prepared = async (observer: pg.Client) =>
      ((await observer.query(`SELECT name, statement FROM pg_prepared_statements ORDER BY name`)).rows as { name: string; statement: string }[]).map((r) => r.name);

    it("lets two clients prepare one name for different statements, and drops a client's statements when it goes", async () => {
      const [a, b, observer] = [new pg.Client(server.url), new pg.Client(server.url), new pg.Client(server.url)];
      for (const c of [a, b, observer]) await c.connect();
      try {
        const before = await prepared(observer);
        // In one shared session the second Parse would fail: prepared statement "same" already exists.
        const fromA = await a.query({ name: "same", text: "SELECT $1::int + 1 AS n", values: [1] });
        const fromB = await b.query({ name: "same", text: "SELECT $1::text || '!' AS n", values: ["b"] });
        expect(fromA.rows).to.deep.equal([{ n: 2 }]);
        expect(fromB.rows).to.deep.equal([{ n: "b!" }]);
        // Each runs its own again, from its plan.
        expect((await a.query({ name: "same", text: "SELECT $1::int + 1 AS n", values: [41] })).rows).to.deep.equal([{ n: 42 }]);
        expect((await b.query({ name: "same", text: "SELECT $1::text || '!' AS n", values: ["c"] })).rows).to.deep.equal([{ n: "c!" }]);
        const during = await prepared(observer);
        expect(during.filter((n) => !before.includes(n))).to.have.length(2);
        await a.end();
        // A new client may take the same name again once the other is gone; the session forgets a's.
        await waitFor(() => prepared(observer), (names) => names.filter((n) => !before.includes(n)).length === 1, 10_000);
        await b.end();
        await waitFor(() => prepared(observer), (names) => names.filter((n) => !before.includes(n)).length === 0, 10_000);
      } finally {
        for (const c of [a, b, observer]) await c.end().catch(() => {});
      }
    });

    it("hands each notification to the clients listening on its channel, not to the one that committed it", async () => {
      const [a, b, writer] = [new pg.Client(server.url), new pg.Client(server.url), new pg.Client(server.url)];
      for (const c of [a, b, writer]) await c.connect();
      const got = new Map<pg.Client, string[]>([a, b, writer].map((c) => [c, []]));
      for (const c of [a, b, writer]) c.on("notification", (n) => got.get(c)!.push(`${n.channel}:${n.payload}`));
      const heard = (c: pg.Client) => got.get(c)!;
      try {
        await a.query("LISTEN svc_one");
        await b.query("LISTEN svc_one");
        await b.query('LISTEN "Svc_Two"');
        await writer.query("SELECT pg_notify('svc_one', 'first')");
        await writer.query(`BEGIN; SELECT pg_notify('Svc_Two', 'in a transaction'); COMMIT`);
        await writer.query("SELECT pg_notify('svc_three', 'nobody listens')");
        await waitFor(async () => [heard(a).length, heard(b).length], ([x, y]) => x === 1 && y === 2, 10_000);
        expect(heard(a)).to.deep.equal(["svc_one:first"]);
        expect(heard(b)).to.deep.equal(["svc_one:first", "Svc_Two:in a transaction"]);
        // One client's UNLISTEN leaves the other listening.
        await a.query("UNLISTEN svc_one");
        await writer.query("SELECT pg_notify('svc_one', 'second')");
        await waitFor(async () => heard(b).length, (n) => n === 3, 10_000);
        // A client that goes leaves the session listening for the next one.
        await b.end();
        const c = new pg.Client(server.url);
        await c.connect();
        const cHeard: string[] = [];
        c.on("notification", (n) => cHeard.push(`${n.channel}:${n.payload}`));
        try {
          await c.query("LISTEN svc_one");
          await writer.query("SELECT pg_notify('svc_one', 'third')");
          await waitFor(async () => cHeard.length, (n) => n === 1, 10_000);
          expect(cHeard).to.deep.equal(["svc_one:third"]);
        } finally {
          await c.end();
        }
        expect(heard(a), "a stopped listening").to.deep.equal(["svc_one:first"]);
        expect(heard(writer), "the committing client hears nothing it did not listen for").to.deep.equal([]);
      } finally {
        for (const c of [a, b, writer]) await c.end().catch(() => {});
      }
    });
  });
});
