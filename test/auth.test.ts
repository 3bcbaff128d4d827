import { expect } from "chai";
import { SIGN_IN_WINDOW_MS } from "../server/auth/sign-in.js";
import { testEnv } from "./setup.js";
import { clientAddress, emailOfLength, fromDashboard, http, newWorkspace, signIn, uniqueEmail } from "./support/actors.js";

/**
 * The code limits count in fixed 15-minute windows (SIGN_IN_WINDOW_MS): a test that fills one
 * starts at least 30 s before its end, so that its requests are not split over two windows (on a
 * loaded machine the 21 requests of the per-IP test once straddled a boundary, and the 21st passed).
 */
async function withinOneWindow(): Promise<void> {
  const left = SIGN_IN_WINDOW_MS - (Date.now() % SIGN_IN_WINDOW_MS);
  if (left < 30_000) await new Promise((r) => setTimeout(r, left + 100));
}

async function requestCode(email: string, ip = clientAddress()) {
  return http("POST", "/v1/auth/request-code", { body: { email }, headers: { "x-forwarded-for": ip } });
}

async function verify(email: string, code: string, ip = clientAddress(), headers: Record<string, string> = {}) {
  return http("POST", "/v1/auth/verify", { body: { email, code }, headers: { "x-forwarded-for": ip, ...headers } });
}

async function codeFor(email: string, since: number): Promise<string> {
  const [, code] = await testEnv().mailbox.waitFor(email, /sign-in code is (\d{6})/, since);
  return code!;
}

describe("dashboard sign-in", () => {
  it("answers 202 with the same body whether or not the address has an account, and mails only members", async () => {
    const ws = await newWorkspace();
    const stranger = uniqueEmail("stranger");
    const { mailbox } = testEnv();
    const since = mailbox.mails.length;
    const known = await requestCode(ws.owner.email);
    const unknown = await requestCode(stranger);
    expect(known.status).to.equal(202);
    expect(unknown.status).to.equal(202);
    expect(unknown.text).to.equal(known.text);
    await codeFor(ws.owner.email, since);
    expect(mailbox.count(stranger)).to.equal(0);
  });

  it("accepts the development owner admin@localhost", async () => {
    expect((await requestCode("admin@localhost")).status).to.equal(202);
  });

  it("accepts an address of 320 characters and refuses 321", async () => {
    expect((await requestCode(emailOfLength(320))).status).to.equal(202);
    const tooLong = await requestCode(emailOfLength(321));
    expect(tooLong.status).to.equal(400);
    expect(tooLong.headers.get("content-type")).to.match(/application\/problem\+json/);
    expect(tooLong.json.code).to.equal("validation_failed");
  });

  it("answers a code that is not six digits with the very 401 of a wrong code, counted as a failed attempt", async () => {
    const ws = await newWorkspace();
    const since = testEnv().mailbox.mails.length;
    await requestCode(ws.owner.email);
    const code = await codeFor(ws.owner.email, since);
    const wrong = await verify(ws.owner.email, code === "111111" ? "222222" : "111111");
    expect(wrong.status).to.equal(401);
    const shape = (res: typeof wrong) => ({ ...(res.json as Record<string, unknown>), request_id: undefined });
    // The first call above and these four spend the code's five attempts.
    for (const bad of ["12345", "1234567", "abcdef", ""]) {
      const res = await verify(ws.owner.email, bad);
      expect(res.status, bad).to.equal(401);
      expect(res.headers.get("content-type"), bad).to.equal(wrong.headers.get("content-type"));
      expect(shape(res), bad).to.deep.equal(shape(wrong));
    }
    const exhausted = await verify(ws.owner.email, code);
    expect(exhausted.status).to.equal(401);
    expect(shape(exhausted)).to.deep.equal(shape(wrong));
  });

  it("still answers 400 to a verify body without a code or with a non-string code (malformed request)", async () => {
    const missing = await http("POST", "/v1/auth/verify", { body: { email: "x@example.test" }, headers: { "x-forwarded-for": clientAddress() } });
    expect(missing.status).to.equal(400);
    expect(missing.json.code).to.equal("validation_failed");
    const numeric = await http("POST", "/v1/auth/verify", { body: { email: "x@example.test", code: 123456 }, headers: { "x-forwarded-for": clientAddress() } });
    expect(numeric.status).to.equal(400);
    expect(numeric.json.code).to.equal("validation_failed");
  });

  it("signs in with the mailed code, sets a HttpOnly SameSite=Lax cookie, and the code is single-use", async () => {
    const ws = await newWorkspace();
    const since = testEnv().mailbox.mails.length;
    await requestCode(ws.owner.email);
    const code = await codeFor(ws.owner.email, since);
    const ok = await verify(ws.owner.email, code);
    expect(ok.status).to.equal(200);
    const cookie = ok.headers.getSetCookie().find((c) => c.startsWith("svc_session="))!;
    expect(cookie).to.match(/HttpOnly/i).and.match(/SameSite=Lax/i).and.not.match(/Secure/i);
    expect(ok.json).to.nested.include({ "user.email": ws.owner.email, "workspace.id": ws.id, role: "owner" });
    const again = await verify(ws.owner.email, code);
    expect(again.status).to.equal(401);
  });

  it("gives one uniform 401 for wrong, missing, expired and exhausted codes", async () => {
    const ws = await newWorkspace();
    const { mailbox, gateway } = testEnv();
    const bodies: string[] = [];

    // never requested
    const missing = await verify(uniqueEmail(), "123456");
    bodies.push(missing.json.detail as string);

    // wrong code, then the right one after 4 wrong attempts still works (5 attempts in all)
    let since = mailbox.mails.length;
    await requestCode(ws.owner.email);
    let code = await codeFor(ws.owner.email, since);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0");
    for (let i = 0; i < 4; i++) {
      const r = await verify(ws.owner.email, wrong);
      expect(r.status).to.equal(401);
      bodies.push(r.json.detail as string);
    }
    expect((await verify(ws.owner.email, code)).status).to.equal(200);

    // five wrong attempts exhaust the code: the right one is then refused the same way
    since = mailbox.mails.length;
    await requestCode(ws.owner.email);
    code = await codeFor(ws.owner.email, since);
    for (let i = 0; i < 5; i++) await verify(ws.owner.email, wrong);
    const exhausted = await verify(ws.owner.email, code);
    expect(exhausted.status).to.equal(401);
    bodies.push(exhausted.json.detail as string);

    // expired: ten minutes have passed
    since = mailbox.mails.length;
    await requestCode(ws.owner.email);
    code = await codeFor(ws.owner.email, since);
    await gateway.ctx.db.query(`UPDATE sign_in_codes SET expires_at = now() - interval '1 second' WHERE email = $1`, [ws.owner.email]);
    const expired = await verify(ws.owner.email, code);
    expect(expired.status).to.equal(401);
    bodies.push(expired.json.detail as string);

    expect(new Set(bodies).size).to.equal(1);
    expect(expired.json.code).to.equal("unauthorized");
  });

  it("stores the code and the session only as digests", async () => {
    const ws = await newWorkspace();
    const since = testEnv().mailbox.mails.length;
    await requestCode(ws.owner.email);
    const code = await codeFor(ws.owner.email, since);
    const rows: { code_digest: Buffer; ttl: number }[] = await testEnv().gateway.ctx.db.query(
      `SELECT code_digest, extract(epoch FROM expires_at - created_at)::int AS ttl FROM sign_in_codes WHERE email = $1`,
      [ws.owner.email],
    );
    expect(rows[0]!.code_digest.toString("utf8")).to.not.include(code);
    expect(rows[0]!.code_digest).to.have.length(32);
    expect(rows[0]!.ttl).to.equal(600);
    const token = ws.owner.cookie.split("=")[1]!;
    const sessions: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM sessions WHERE token_digest::text LIKE $1`, [`%${token}%`]);
    expect(sessions).to.have.length(0);
  });

  it("limits code requests per address: the fifth in 15 minutes passes, the sixth gets 429", async function () {
    this.timeout(60_000);
    const email = uniqueEmail("limited");
    await withinOneWindow();
    for (let i = 0; i < 5; i++) expect((await requestCode(email)).status).to.equal(202);
    const sixth = await requestCode(email);
    expect(sixth.status).to.equal(429);
    expect(Number(sixth.headers.get("retry-after"))).to.be.within(1, 900);
    expect(sixth.json.code).to.equal("rate_limited");
  });

  it("limits code requests per client IP: the twentieth passes, the twenty-first gets 429", async function () {
    this.timeout(60_000);
    const ip = clientAddress();
    await withinOneWindow();
    for (let i = 0; i < 20; i++) expect((await requestCode(uniqueEmail(), ip)).status).to.equal(202);
    expect((await requestCode(uniqueEmail(), ip)).status).to.equal(429);
    expect((await requestCode(uniqueEmail(), clientAddress())).status).to.equal(202);
  });

  it("reads the session, and logout ends it", async () => {
    const ws = await newWorkspace();
    const session = await http("GET", "/v1/auth/session", { headers: { cookie: ws.owner.cookie } });
    expect(session.status).to.equal(200);
    expect(session.json).to.nested.include({ "workspace.id": ws.id, role: "owner" });
    // No body and no Origin: what another site's form or image can send. Refused; still signed in.
    const unproven = await http("POST", "/v1/auth/logout", { headers: { cookie: ws.owner.cookie } });
    expect(unproven.status).to.equal(403);
    expect(unproven.json.code).to.equal("cross_site_request");
    expect((await http("GET", "/v1/auth/session", { headers: { cookie: ws.owner.cookie } })).status).to.equal(200);
    expect((await http("POST", "/v1/auth/logout", { headers: { cookie: ws.owner.cookie, "sec-fetch-site": "same-origin" } })).status).to.equal(204);
    expect((await http("GET", "/v1/auth/session", { headers: { cookie: ws.owner.cookie } })).status).to.equal(401);
    expect((await http("GET", "/v1/auth/session")).status).to.equal(401);
  });

  it("refuses cookie-authenticated changes from another site, allows the dashboard's own origin", async () => {
    const ws = await newWorkspace();
    const body = { name: "k", scopes: ["messages:read"] };
    const evil = await http("POST", "/v1/api-keys", { body, headers: { cookie: ws.owner.cookie, origin: "https://evil.example" } });
    expect(evil.status).to.equal(403);
    expect(evil.json.code).to.equal("cross_site_request");
    const crossSite = await http("POST", "/v1/api-keys", { body, headers: { cookie: ws.owner.cookie, "sec-fetch-site": "cross-site" } });
    expect(crossSite.status).to.equal(403);
    const own = await http("POST", "/v1/api-keys", { body, headers: { cookie: ws.owner.cookie, origin: new URL(testEnv().gateway.ctx.config.webUrl).origin } });
    expect(own.status).to.equal(201);
    // A non-browser client (no Origin, no Sec-Fetch-Site) proves itself by sending JSON.
    expect((await http("POST", "/v1/api-keys", { body, headers: { cookie: ws.owner.cookie } })).status).to.equal(201);
    const keys: unknown[] = await testEnv().gateway.ctx.db.query(`SELECT 1 FROM api_keys WHERE workspace_id = $1`, [ws.id]);
    expect(keys).to.have.length(2);
    // JSON from a page that names another origin is refused all the same.
    expect((await http("POST", "/v1/api-keys", { body, headers: { cookie: ws.owner.cookie, origin: "https://evil.example", "sec-fetch-site": "same-origin" } })).status).to.equal(403);
  });

  it("reads no form but the token endpoint's: a form with the session cookie changes nothing", async () => {
    const ws = await newWorkspace("enterprise");
    const member = await ws.addMember("viewer");
    const members = (await http("GET", "/v1/members", { headers: { cookie: ws.owner.cookie } })).json.members as { id: string; email: string }[];
    const viewerId = members.find((m) => m.email === member.email)!.id;
    const form = (method: string, path: string, fields: Record<string, string>, headers: Record<string, string> = { cookie: ws.owner.cookie }) =>
      http(method, path, { raw: new URLSearchParams(fields).toString(), headers: { ...headers, "content-type": "application/x-www-form-urlencoded" } });
    // What the forms of another site's page did: invite an admin, promote a member, create a
    // connection, store an AI key.
    const attempts = [
      await form("POST", "/v1/members/invitations", { email: "attacker@example.test", role: "admin" }),
      await form("PATCH", `/v1/members/${viewerId}`, { role: "admin" }),
      await form("POST", "/v1/connections", { slug: "attacker" }),
      await form("POST", "/v1/ai/credentials", { provider: "vendortwo", label: "attacker", api_key: "sk-attacker-0000" }),
    ];
    for (const res of attempts) {
      expect(res.status, res.text).to.equal(403);
      expect(res.json.code).to.equal("cross_site_request");
      expect(res.json.detail).to.contain("Content-Type: application/json");
    }
    const team = (await http("GET", "/v1/members", { headers: { cookie: ws.owner.cookie } })).json;
    expect(team.invitations).to.deep.equal([]);
    expect((team.members as { id: string; role: string }[]).find((m) => m.id === viewerId)!.role).to.equal("viewer");
    expect(((await http("GET", "/v1/connections", { headers: { cookie: ws.owner.cookie } })).json.data as unknown[]).length).to.equal(0);
    expect(((await http("GET", "/v1/ai/credentials", { headers: { cookie: ws.owner.cookie } })).json.data as unknown[]).length).to.equal(0);
    // From the dashboard's own origin a form is still not read: the API takes JSON.
    const own = await form("POST", "/v1/connections", { slug: "own-form" }, fromDashboard(ws.owner.cookie));
    expect(own.status).to.equal(400);
    expect(own.json.detail).to.contain("must be JSON");
    // An API key is not a cookie: no origin check, and its form is refused as not JSON.
    const { key } = await ws.key(["connections:write"]);
    const keyed = await form("POST", "/v1/connections", { slug: "key-form" }, { authorization: `Bearer ${key}` });
    expect(keyed.status).to.equal(400);
    expect(keyed.json.detail).to.contain("must be JSON");
    // A public route reads no form either.
    const requested = await form("POST", "/v1/auth/request-code", { email: member.email }, {});
    expect(requested.status).to.equal(400);
    expect(requested.json.detail).to.contain("must be JSON");
  });

  it("lets an invited address sign in before it has an account, and refuses everyone else", async () => {
    const ws = await newWorkspace();
    const invitee = uniqueEmail("invitee");
    await ws.owner.client.team.invite({ body: { email: invitee, role: "viewer" } });
    const cookie = await signIn(invitee);
    const session = await http("GET", "/v1/auth/session", { headers: { cookie } });
    expect(session.status).to.equal(200);
    expect(session.json).to.deep.include({ workspace: null, role: null });
    const workspace = await http("GET", "/v1/workspace", { headers: { cookie } });
    expect(workspace.status).to.equal(403);
  });
});
