// Connections over HTTP: creation rules and limits, the one-time callback token, the plan's
// allowance, tenancy, soft delete with its queued purge, pairing by single-use QR grant through the
// sandbox, and the suspend/resume state table.
import { createHash } from "node:crypto";
import { expect } from "chai";
import type { DataSource } from "typeorm";
import { expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace, type Client, type TestWorkspace } from "./support/actors.js";
import { codeOf, pairConnection, qrOf, sandbox, scan, uniquePhone, waitForConnection } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";

const db = (): DataSource => testEnv().gateway.ctx.db;
const ALL = ["connections:read", "connections:write"] as const;

async function keyed(plan = "pro"): Promise<{ ws: TestWorkspace; client: Client; auth: Record<string, string> }> {
  const ws = await newWorkspace(plan);
  const { client, key } = await ws.key([...ALL]);
  return { ws, client, auth: { authorization: `Bearer ${key}` } };
}

async function eventTypes(connectionId: string): Promise<string[]> {
  const rows: { type: string }[] = await db().query(`SELECT type FROM events WHERE connection_id = $1 ORDER BY created_at, id`, [connectionId]);
  return rows.map((r) => r.type);
}

describe("connections", () => {
  describe("create", () => {
    it("validates slug and name at their limits and refuses extra properties", async () => {
      const { auth } = await keyed();
      const create = (body: unknown) => http("POST", "/v1/connections", { body, headers: auth });
      for (const slug of ["abc", "a".repeat(40), "a-1", "0-z9"]) expect((await create({ slug })).status, slug).to.equal(201);
      for (const slug of ["ab", "a".repeat(41), "-abc", "abc-", "Abc", "ab_c", "ab c", ""]) {
        const res = await create({ slug });
        expect(res.status, slug).to.equal(400);
        expect(res.json.code).to.equal("validation_failed");
      }
      expect((await create({ slug: "name-80", name: "n".repeat(80) })).status).to.equal(201);
      expect((await create({ slug: "name-1", name: "n" })).status).to.equal(201);
      expect((await create({ slug: "name-81", name: "n".repeat(81) })).status).to.equal(400);
      expect((await create({ slug: "name-0", name: "" })).status).to.equal(400);
      const extra = await create({ slug: "extra", workspace: "wsp_other" });
      expect(extra.status).to.equal(400);
      expect(extra.json.errors).to.be.an("array").that.is.not.empty;
      expect((await create({})).status).to.equal(400);
    });

    it("returns the callback token once and stores only its digest and a nonce", async () => {
      const { client, auth } = await keyed();
      const created = await expectOk(client.connections.create({ body: { slug: "once", name: "Front desk" } }));
      expect(created).to.include({ object: "connection", slug: "once", name: "Front desk", state: "created", phone: null, transport: "sandbox" });
      expect(created.id).to.match(/^con_/);
      expect(created.callback_token).to.be.a("string").with.length.greaterThan(30);

      const got = await http("GET", "/v1/connections/once", { headers: auth });
      const listed = await http("GET", "/v1/connections", { headers: auth });
      for (const res of [got, listed]) {
        expect(res.status).to.equal(200);
        expect(res.text).to.not.include(created.callback_token);
        expect(res.text).to.not.include("callback_token");
      }
      const [row] = (await db().query(`SELECT row_to_json(c)::text AS json, callback_token_digest, callback_nonce FROM connections c WHERE id = $1`, [
        created.id,
      ])) as { json: string; callback_token_digest: Buffer; callback_nonce: string }[];
      expect(row!.callback_token_digest.equals(createHash("sha256").update(created.callback_token).digest())).to.equal(true);
      expect(row!.callback_nonce).to.be.a("string").that.is.not.empty;
      expect(row!.json).to.not.include(created.callback_token);
    });

    it("answers 409 slug_taken for a live slug, which becomes free again after delete", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "taken" } }));
      const again = await client.connections.create({ body: { slug: "taken" } });
      expect(again.status).to.equal(409);
      expect((again.body as { code: string }).code).to.equal("slug_taken");
      expect((await client.connections.delete({ params: { connection: "taken" } })).status).to.equal(204);
      expect((await client.connections.create({ body: { slug: "taken" } })).status).to.equal(201);
    });

    it("settles parallel creates of one slug with a single 201", async () => {
      const { client } = await keyed();
      const results = await Promise.all([1, 2, 3, 4].map(() => client.connections.create({ body: { slug: "race" } })));
      expect(results.map((r) => r.status).sort()).to.deep.equal([201, 409, 409, 409]);
    });

    it("answers 402 at the plan's allowance, naming a plan with room; deleted connections do not count", async () => {
      const { client } = await keyed("free");
      await expectOk(client.connections.create({ body: { slug: "first" } }));
      const second = await client.connections.create({ body: { slug: "second" } });
      expect(second.status).to.equal(402);
      expect(second.body).to.include({ code: "plan_required", required_plan: "pro" });
      expect((await client.connections.delete({ params: { connection: "first" } })).status).to.equal(204);
      expect((await client.connections.create({ body: { slug: "second" } })).status).to.equal(201);
    });
  });

  describe("reading and tenancy", () => {
    it("lists live connections, gets one by slug, and answers 404 for unknown ones", async () => {
      const { client } = await keyed();
      for (const slug of ["one", "two", "three"]) await expectOk(client.connections.create({ body: { slug } }));
      await expectOk(client.connections.delete({ params: { connection: "two" } }));
      const list = await expectOk(client.connections.list());
      expect(list.data.map((c) => c.slug)).to.have.members(["one", "three"]);
      expect((await expectOk(client.connections.get({ params: { connection: "one" } }))).state).to.equal("created");
      for (const slug of ["two", "nope", "x"]) expect((await client.connections.get({ params: { connection: slug } })).status, slug).to.equal(404);
    });

    it("answers 404 to another workspace's key for every operation on the connection", async () => {
      const a = await keyed();
      const b = await keyed();
      await expectOk(a.client.connections.create({ body: { slug: "mine" } }));
      const grant = await expectOk(a.client.connections.pair({ params: { connection: "mine" } }));
      const p = { params: { connection: "mine" } };
      expect((await b.client.connections.get(p)).status).to.equal(404);
      expect((await b.client.connections.pair(p)).status).to.equal(404);
      expect((await b.client.connections.qr({ params: { connection: "mine", grantId: grant.grant_id } })).status).to.equal(404);
      expect((await b.client.connections.suspend(p)).status).to.equal(404);
      expect((await b.client.connections.resume(p)).status).to.equal(404);
      expect((await b.client.connections.delete(p)).status).to.equal(404);
      expect((await expectOk(b.client.connections.list())).data).to.deep.equal([]);
      // untouched by all of that
      expect((await expectOk(a.client.connections.get(p))).state).to.equal("pairing");
      expect((await a.client.connections.qr({ params: { connection: "mine", grantId: grant.grant_id } })).status).to.equal(200);
    });

    it("requires connections:read to read and connections:write to change", async () => {
      const ws = await newWorkspace();
      const reader = await ws.key(["connections:read"]);
      const writer = await ws.key(["connections:write"]);
      expect((await reader.client.connections.create({ body: { slug: "scoped" } })).status).to.equal(403);
      expect((await writer.client.connections.create({ body: { slug: "scoped" } })).status).to.equal(201);
      expect((await writer.client.connections.list()).status).to.equal(403);
      expect((await reader.client.connections.list()).status).to.equal(200);
    });
  });

  describe("pairing", () => {
    it("opens a 60-second grant whose QR is single use and carries an SVG data URL", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "qr-code" } }));
      const grant = await expectOk(client.connections.pair({ params: { connection: "qr-code" } }));
      expect(grant.grant_id).to.match(/^grt_/);
      const ttl = Date.parse(grant.expires_at) - Date.now();
      expect(ttl).to.be.within(50_000, 61_000);
      expect((await expectOk(client.connections.get({ params: { connection: "qr-code" } }))).state).to.equal("pairing");

      const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: "qr-code", grantId: grant.grant_id } })));
      expect(qr.grant_id).to.equal(grant.grant_id);
      expect(qr.payload).to.match(/^svc-sandbox-pair:/);
      expect(qr.qr_svg).to.match(/^data:image\/svg\+xml;base64,/);
      const svg = Buffer.from(qr.qr_svg.split(",")[1]!, "base64").toString("utf8");
      expect(svg).to.match(/^<svg[\s>]/);
      const [row] = (await db().query(`SELECT count(*)::int AS n FROM pairing_grants WHERE id = $1`, [grant.grant_id])) as { n: number }[];
      expect(row!.n).to.equal(0);

      const second = await client.connections.qr({ params: { connection: "qr-code", grantId: grant.grant_id } });
      expect(second.status).to.equal(404);
      expect((await client.connections.qr({ params: { connection: "qr-code", grantId: "grt_unknown" } })).status).to.equal(404);
    });

    it("stores the pairing payload encrypted, and answers 404 for an expired grant", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "expired" } }));
      const grant = await expectOk(client.connections.pair({ params: { connection: "expired" } }));
      const [row] = (await db().query(`SELECT payload_sealed FROM pairing_grants WHERE id = $1`, [grant.grant_id])) as { payload_sealed: string }[];
      expect(row!.payload_sealed).to.match(/^v1\./).and.not.include("svc-sandbox-pair");
      await db().query(`UPDATE pairing_grants SET expires_at = now() - interval '1 second' WHERE id = $1`, [grant.grant_id]);
      expect((await client.connections.qr({ params: { connection: "expired", grantId: grant.grant_id } })).status).to.equal(404);
    });

    it("replaces an open grant with a new one: only the newest payload links", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "regrant" } }));
      const first = await expectOk(client.connections.pair({ params: { connection: "regrant" } }));
      const second = await expectOk(client.connections.pair({ params: { connection: "regrant" } }));
      expect((await client.connections.qr({ params: { connection: "regrant", grantId: first.grant_id } })).status).to.equal(404);
      const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: "regrant", grantId: second.grant_id } })));
      const phone = uniquePhone();
      await scan(qr.payload, phone);
      const connected = await waitForConnection(client, "regrant", (c) => c.state === "connected");
      expect(connected.phone).to.equal(phone);
    });

    it("links through a sandbox scan, records connection.connected, and refuses to pair a connected connection", async () => {
      const { client } = await keyed();
      const phone = uniquePhone();
      const connected = await pairConnection(client, "linked", phone);
      expect(connected).to.include({ state: "connected", phone });
      expect(await eventTypes(connected.id)).to.include("connection.connected");
      const again = await client.connections.pair({ params: { connection: "linked" } });
      expect(again.status).to.equal(409);
      expect((again.body as { code: string }).code).to.equal("invalid_state");
      // a scanned payload cannot link twice
      expect((await sandbox("POST", "/scan", { payload: "svc-sandbox-pair:unknown", phone })).status).to.equal(404);
    });

    it("pairs by phone-number code: the grant shows a code, single use, that links only when typed on that phone", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "by-code" } }));
      const phone = uniquePhone();
      const grant = await expectOk(client.connections.pair({ params: { connection: "by-code" }, body: { method: "code", phone } }));
      expect(grant.method).to.equal("code");
      const [row] = (await db().query(`SELECT payload_sealed, method FROM pairing_grants WHERE id = $1`, [grant.grant_id])) as { payload_sealed: string; method: string }[];
      expect(row!.method).to.equal("code");
      expect(row!.payload_sealed).to.match(/^v1\./);
      const redeemed = await client.connections.qr({ params: { connection: "by-code", grantId: grant.grant_id } });
      expect(redeemed.headers.get("cache-control")).to.equal("no-store");
      const { code } = codeOf(await expectOk(Promise.resolve(redeemed)));
      expect(code).to.match(/^[1-9A-HJ-NP-TV-Z]{4}-[1-9A-HJ-NP-TV-Z]{4}$/);
      expect(redeemed.body).to.not.have.any.keys("payload", "qr_svg");
      expect((await client.connections.qr({ params: { connection: "by-code", grantId: grant.grant_id } })).status).to.equal(404);
      // Typed on another phone, the code links nothing; on the phone it was asked for, it links.
      expect((await sandbox("POST", "/enter-code", { code, phone: uniquePhone() })).status).to.equal(404);
      expect((await expectOk(client.connections.get({ params: { connection: "by-code" } }))).state).to.equal("pairing");
      expect((await sandbox("POST", "/enter-code", { code: code.toLowerCase().replace("-", ""), phone })).status).to.equal(200);
      const connected = await waitForConnection(client, "by-code", (c) => c.state === "connected");
      expect(connected.phone).to.equal(phone);
      expect((await sandbox("POST", "/enter-code", { code, phone })).status, "a code links once").to.equal(404);
    });

    it("takes method qr explicitly, and a new grant replaces a code with a QR", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "code-then-qr" } }));
      const phone = uniquePhone();
      const first = await expectOk(client.connections.pair({ params: { connection: "code-then-qr" }, body: { method: "code", phone } }));
      const { code } = codeOf(await expectOk(client.connections.qr({ params: { connection: "code-then-qr", grantId: first.grant_id } })));
      const second = await expectOk(client.connections.pair({ params: { connection: "code-then-qr" }, body: { method: "qr" } }));
      expect(second.method).to.equal("qr");
      const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: "code-then-qr", grantId: second.grant_id } })));
      expect((await sandbox("POST", "/enter-code", { code, phone })).status, "the replaced code no longer links").to.equal(404);
      await scan(qr.payload, phone);
      expect((await waitForConnection(client, "code-then-qr", (c) => c.state === "connected")).phone).to.equal(phone);
    });

    it("refuses a bad pairing body with 400 and changes nothing", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "bad-pair" } }));
      const pair = (body: unknown) => client.connections.pair({ params: { connection: "bad-pair" }, body: body as { method: "code" } });
      const refused: [unknown, string][] = [
        [{ method: "code" }, "body.phone"],
        [{ method: "qr", phone: "+15550001111" }, "body.phone"],
        [{ method: "sms", phone: "+15550001111" }, "body.method"],
        [{ method: "code", phone: "15550001111" }, "body.phone"],
        // 6 digits: one too few; 16: one too many
        [{ method: "code", phone: "+123456" }, "body.phone"],
        [{ method: "code", phone: "+1234567890123456" }, "body.phone"],
        [{ method: "code", phone: "+15550001111", extra: 1 }, "body"],
      ];
      for (const [body, path] of refused) {
        const res = await pair(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(JSON.stringify(res.body), JSON.stringify(body)).to.include(path);
      }
      const [{ n }] = (await db().query(`SELECT count(*)::int AS n FROM pairing_grants g JOIN connections c ON c.id = g.connection_id WHERE c.slug = 'bad-pair'`)) as [{ n: number }];
      expect(n).to.equal(0);
      expect((await expectOk(client.connections.get({ params: { connection: "bad-pair" } }))).state).to.equal("created");
      // The limits' last valid values: 7 and 15 digits.
      for (const phone of ["+1234567", "+123456789012345"]) expect((await pair({ method: "code", phone })).status, phone).to.equal(200);
    });

    it("answers 503 when no engine serves the connection's transport", async () => {
      const { client } = await keyed();
      const created = await expectOk(client.connections.create({ body: { slug: "orphan" } }));
      await db().query(`UPDATE connections SET transport = 'nope' WHERE id = $1`, [created.id]);
      const res = await client.connections.pair({ params: { connection: "orphan" } });
      expect(res.status).to.equal(503);
      expect((res.body as { code: string }).code).to.equal("transport_unavailable");
      expect((await expectOk(client.connections.get({ params: { connection: "orphan" } }))).state).to.equal("created");
    });
  });

  describe("moving to another engine", () => {
    it("moves a connection whose engine is not configured to one that is, keeping it, and it then pairs there", async () => {
      const { client, auth } = await keyed();
      const created = await expectOk(client.connections.create({ body: { slug: "stranded" } }));
      // As a connection made on an engine this gateway does not run (a production gateway has no sandbox).
      await db().query(`UPDATE connections SET transport = 'nope' WHERE id = $1`, [created.id]);
      expect((await client.connections.pair({ params: { connection: "stranded" } })).status).to.equal(503);
      const moved = await expectOk(client.connections.update({ params: { connection: "stranded" }, body: { transport: "baileys" } }));
      expect(moved).to.include({ id: created.id, slug: "stranded", transport: "baileys", state: "created" });
      expect((await expectOk(client.connections.get({ params: { connection: "stranded" } }))).transport).to.equal("baileys");
      // The Baileys engine (its socket stand-in in tests) serves it now.
      const grant = await expectOk(client.connections.pair({ params: { connection: "stranded" } }));
      const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: "stranded", grantId: grant.grant_id } })));
      expect(qr.payload).to.match(/^standin-qr:/);
      // Back to the sandbox while pairing: the open grant is withdrawn, the state is created again.
      const regrant = await expectOk(client.connections.pair({ params: { connection: "stranded" } }));
      const back = await expectOk(client.connections.update({ params: { connection: "stranded" }, body: { transport: "sandbox" } }));
      expect(back).to.include({ transport: "sandbox", state: "created" });
      expect((await client.connections.qr({ params: { connection: "stranded", grantId: regrant.grant_id } })).status).to.equal(404);
      const phone = uniquePhone();
      const sandboxGrant = await expectOk(client.connections.pair({ params: { connection: "stranded" } }));
      await scan(qrOf(await expectOk(client.connections.qr({ params: { connection: "stranded", grantId: sandboxGrant.grant_id } }))).payload, phone);
      expect((await waitForConnection(client, "stranded", (c) => c.state === "connected")).phone).to.equal(phone);
      // Bad input changes nothing: an unknown engine, another field, no field.
      for (const body of [{ transport: "nope" }, { transport: "baileys", slug: "renamed" }, {}, { transport: "" }]) {
        const res = await http("PATCH", "/v1/connections/stranded", { body, headers: auth });
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.json.code).to.equal("validation_failed");
      }
      expect((await expectOk(client.connections.get({ params: { connection: "stranded" } }))).transport).to.equal("sandbox");
    });

    it("refuses while a device is linked, and answers 404 for another workspace's connection", async () => {
      const { client } = await keyed();
      await pairConnection(client, "linked-move", uniquePhone());
      const refused = await client.connections.update({ params: { connection: "linked-move" }, body: { transport: "baileys" } });
      expect(refused.status).to.equal(409);
      expect((refused.body as { code: string; detail: string }).code).to.equal("invalid_state");
      await expectOk(client.connections.suspend({ params: { connection: "linked-move" } }));
      expect((await client.connections.update({ params: { connection: "linked-move" }, body: { transport: "baileys" } })).status).to.equal(409);
      const after = await expectOk(client.connections.get({ params: { connection: "linked-move" } }));
      expect(after).to.include({ transport: "sandbox", state: "suspended" });
      // Moving to the engine it is on changes nothing, whatever the state.
      expect((await expectOk(client.connections.update({ params: { connection: "linked-move" }, body: { transport: "sandbox" } }))).state).to.equal("suspended");
      const other = await keyed();
      expect((await other.client.connections.update({ params: { connection: "linked-move" }, body: { transport: "baileys" } })).status).to.equal(404);
    });
  });

  describe("suspend and resume", () => {
    it("follows the state table: suspend from live states, resume back to connected while linked", async () => {
      const { client } = await keyed();
      const c = await pairConnection(client, "susp", uniquePhone());
      const p = { params: { connection: "susp" } };
      expect((await expectOk(client.connections.suspend(p))).state).to.equal("suspended");
      const twice = await client.connections.suspend(p);
      expect(twice.status).to.equal(409);
      expect((twice.body as { code: string }).code).to.equal("invalid_state");
      expect((await client.connections.pair(p)).status).to.equal(409);
      expect((await expectOk(client.connections.resume(p))).state).to.equal("connected");
      expect((await client.connections.resume(p)).status).to.equal(409);
      expect(await eventTypes(c.id)).to.deep.equal(["connection.connected", "connection.suspended", "connection.connected"]);
    });

    it("resumes to disconnected when the device logged out while suspended", async () => {
      const { client } = await keyed();
      const phone = uniquePhone();
      const c = await pairConnection(client, "gone", phone);
      await expectOk(client.connections.suspend({ params: { connection: "gone" } }));
      expect((await sandbox("POST", "/logout", { phone })).status).to.equal(200);
      await waitFor(
        async () => ((await db().query(`SELECT linked FROM connections WHERE id = $1`, [c.id])) as { linked: boolean }[])[0]!.linked,
        (linked) => linked === false,
      );
      expect((await expectOk(client.connections.get({ params: { connection: "gone" } }))).state).to.equal("suspended");
      expect((await expectOk(client.connections.resume({ params: { connection: "gone" } }))).state).to.equal("disconnected");
      // and can be paired again from there
      expect((await client.connections.pair({ params: { connection: "gone" } })).status).to.equal(200);
    });

    it("suspends a never-paired connection and resumes it to disconnected; suspend drops open grants", async () => {
      const { client } = await keyed();
      await expectOk(client.connections.create({ body: { slug: "fresh" } }));
      const grant = await expectOk(client.connections.pair({ params: { connection: "fresh" } }));
      expect((await expectOk(client.connections.suspend({ params: { connection: "fresh" } }))).state).to.equal("suspended");
      expect((await client.connections.qr({ params: { connection: "fresh", grantId: grant.grant_id } })).status).to.equal(404);
      expect((await expectOk(client.connections.resume({ params: { connection: "fresh" } }))).state).to.equal("disconnected");
    });
  });

  describe("delete", () => {
    it("soft-deletes at once and purges the connection's messages in a queued job", async function () {
      // Its own waits: pairing, the inbound message, the purge job (15 s); a loaded embedded run passed 20 s.
      this.timeout(45_000);
      const { client } = await keyed();
      const phone = uniquePhone();
      const c = await pairConnection(client, "doomed", phone);
      expect((await sandbox("POST", "/inbound", { to: phone, from: uniquePhone(), body: "hello" })).status).to.equal(202);
      await waitFor(
        async () => ((await db().query(`SELECT count(*)::int AS n FROM messages WHERE connection_id = $1`, [c.id])) as { n: number }[])[0]!.n,
        (n) => n === 1,
      );
      expect((await client.connections.delete({ params: { connection: "doomed" } })).status).to.equal(204);
      expect((await client.connections.get({ params: { connection: "doomed" } })).status).to.equal(404);
      expect((await expectOk(client.connections.list())).data).to.deep.equal([]);
      expect((await client.connections.delete({ params: { connection: "doomed" } })).status).to.equal(404);
      const [row] = (await db().query(`SELECT state, deleted_at FROM connections WHERE id = $1`, [c.id])) as { state: string; deleted_at: Date | null }[];
      expect(row!.state).to.equal("deleted");
      expect(row!.deleted_at).to.be.instanceOf(Date);

      const remaining = async () =>
        (
          (await db().query(
            `SELECT (SELECT count(*) FROM messages WHERE connection_id = $1)::int + (SELECT count(*) FROM provider_callbacks WHERE connection_id = $1)::int AS n`,
            [c.id],
          )) as { n: number }[]
        )[0]!.n;
      await waitFor(remaining, (n) => n === 0, 15_000);
      // the sandbox forgot the session: the number no longer receives for it
      expect((await sandbox("POST", "/inbound", { to: phone, from: uniquePhone(), body: "anyone?" })).status).to.equal(404);
    });

    it("purges idempotently, with each message's timeline and hand-off entry, and never touches a live connection", async () => {
      const { purgeConnection } = await import("../jobs/purge-connection.js");
      const { client } = await keyed();
      const live = await expectOk(client.connections.create({ body: { slug: "alive" } }));
      const kept = await expectOk(client.connections.create({ body: { slug: "kept" } }));
      for (const [id, connection] of [["msg_purge_test_live", live.id], ["msg_purge_test_kept", kept.id]]) {
        await db().query(
          `WITH m AS (
             INSERT INTO messages (id, workspace_id, connection_id, direction, status, recipient)
             SELECT $1, workspace_id, id, 'outbound', 'queued', '"+15550001"' FROM connections WHERE id = $2
           ), t AS (INSERT INTO message_timeline (message_id, status) VALUES ($1, 'queued'))
           INSERT INTO dispatch_queue (message_id, connection_id, available_at) VALUES ($1, $2, now() + interval '1 day')`,
          [id, connection],
        );
      }
      // Rows that name each message: the message, its timeline entry, its hand-off entry (due
      // tomorrow: the dispatcher leaves it alone).
      const left = async (id: string) =>
        (
          (await db().query(
            `SELECT (SELECT count(*) FROM messages WHERE id = $1) + (SELECT count(*) FROM message_timeline WHERE message_id = $1)
                  + (SELECT count(*) FROM dispatch_queue WHERE message_id = $1) AS n`,
            [id],
          )) as { n: string }[]
        )[0]!.n;
      expect(await purgeConnection(db(), live.id)).to.equal(0);
      expect(await left("msg_purge_test_live")).to.equal("3");
      await expectOk(client.connections.delete({ params: { connection: "alive" } }));
      expect(await purgeConnection(db(), live.id)).to.equal(1);
      expect(await purgeConnection(db(), live.id)).to.equal(0);
      expect(await left("msg_purge_test_live")).to.equal("0");
      expect(await left("msg_purge_test_kept")).to.equal("3");
    });
  });
});
