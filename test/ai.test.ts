// AI credentials and policies over HTTP (docs/ai.md): every field at its limits, the sealed key
// (never returned, never in the audit log), the outbound address policy on base_url, 402 off-plan,
// the 404 of a connection without a policy, replacing a policy, deleting a credential a policy names.
// The test gateway allows 127.0.0.0/8 (OUTBOUND_ALLOW_PRIVATE), so loopback base URLs register.
import { expect } from "chai";
import type { DataSource } from "typeorm";
import { MAX_SAFE_INT } from "../contract/common.js";
import { AiCredentialService } from "../server/ai/credentials.js";
import { ApiError } from "../server/http/errors.js";
import type { ApiKeyPrincipal } from "../server/http/principal.js";
import { decrypt, keyId } from "../server/secrets.js";
import { EMPTY_ALLOW_LIST } from "../server/outbound/address-policy.js";
import { testEnv } from "./setup.js";
import { http, newWorkspace } from "./support/actors.js";

const db = (): DataSource => testEnv().gateway.ctx.db;
const API_KEY = "sk-test-0123456789abcdefXyZ9";

async function aiWorkspace(plan = "pro") {
  const ws = await newWorkspace(plan);
  const { key } = await ws.key(["ai:read", "ai:write", "connections:write"]);
  const auth = { authorization: `Bearer ${key}` };
  return {
    ws,
    auth,
    createCredential: (body: unknown) => http("POST", "/v1/ai/credentials", { body, headers: auth }),
    listCredentials: () => http("GET", "/v1/ai/credentials", { headers: auth }),
    deleteCredential: (id: string) => http("DELETE", `/v1/ai/credentials/${id}`, { headers: auth }),
    setPolicy: (connection: string, body: unknown) => http("PUT", `/v1/ai/policies/${connection}`, { body, headers: auth }),
    getPolicy: (connection: string) => http("GET", `/v1/ai/policies/${connection}`, { headers: auth }),
    listPolicies: () => http("GET", "/v1/ai/policies", { headers: auth }),
    connection: async (slug: string) => expect((await http("POST", "/v1/connections", { body: { slug }, headers: auth })).status).to.equal(201),
  };
}

describe("AI credentials", () => {
  it("stores the key sealed under SECRET_KEY with its key id, shows only its last four characters", async () => {
    const t = await aiWorkspace();
    const created = await t.createCredential({ provider: "vendorone_compatible", label: "main", api_key: API_KEY });
    expect(created.status, created.text).to.equal(201);
    expect(created.json).to.include({ provider: "vendorone_compatible", label: "main", base_url: null, fingerprint: "…XyZ9", last_used_at: null });
    expect(created.json.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(created.text).to.not.include(API_KEY.slice(0, 12));

    const secretKey = testEnv().gateway.ctx.config.secretKey;
    const [row] = (await db().query(`SELECT api_key_sealed, key_id FROM ai_credentials WHERE id = $1`, [created.json.id])) as { api_key_sealed: string; key_id: string }[];
    expect(row!.api_key_sealed).to.not.include(API_KEY);
    expect(decrypt(secretKey, row!.api_key_sealed)).to.equal(API_KEY);
    expect(row!.key_id).to.equal(keyId(secretKey)).and.to.match(/^[0-9a-f]{16}$/);

    const listed = await t.listCredentials();
    expect(listed.status).to.equal(200);
    expect(listed.json.data).to.deep.equal([created.json]);
    expect(listed.text).to.not.include(API_KEY.slice(0, 12));
    const audit = (await db().query(`SELECT details::text AS details FROM audit_log WHERE workspace_id = $1 AND action LIKE 'ai_%'`, [t.ws.id])) as { details: string }[];
    expect(audit).to.have.length(1);
    expect(audit[0]!.details).to.not.include(API_KEY.slice(0, 12));
  });

  it("checks every field at its limits and refuses unknown ones", async () => {
    const t = await aiWorkspace();
    const ok = { provider: "vendortwo", label: "l", api_key: "k".repeat(8) };
    const status = async (body: unknown) => (await t.createCredential(body)).status;
    expect(await status(ok)).to.equal(201);
    expect(await status({ ...ok, label: "l".repeat(80), api_key: "k".repeat(8192) })).to.equal(201);
    expect(await status({ ...ok, label: "" })).to.equal(400);
    expect(await status({ ...ok, label: "l".repeat(81) })).to.equal(400);
    expect(await status({ ...ok, api_key: "k".repeat(7) })).to.equal(400);
    expect(await status({ ...ok, api_key: "k".repeat(8193) })).to.equal(400);
    expect(await status({ ...ok, provider: "other" })).to.equal(400);
    expect(await status({ ...ok, base_url: "not a url" })).to.equal(400);
    expect(await status({ ...ok, extra: 1 })).to.equal(400);
    const { api_key: _k, ...withoutKey } = ok;
    expect(await status(withoutKey)).to.equal(400);
  });

  it("takes a base_url only through the outbound address policy", async () => {
    const t = await aiWorkspace();
    const ok = await t.createCredential({ provider: "vendorone_compatible", label: "local", api_key: API_KEY, base_url: "http://127.0.0.1:11434/v1" });
    expect(ok.status, ok.text).to.equal(201);
    expect(ok.json.base_url).to.equal("http://127.0.0.1:11434/v1");
    for (const base_url of ["http://10.1.2.3/v1", "https://169.254.169.254/v1", "https://user:pw@api.example.test/v1", "ftp://127.0.0.1/v1"]) {
      const res = await t.createCredential({ provider: "vendorone_compatible", label: "x", api_key: API_KEY, base_url });
      expect(res.status, base_url).to.equal(400);
      expect(JSON.stringify(res.json.errors), base_url).to.include("base_url");
    }
    // Without an allow-list loopback is private like any other range.
    const strict = new AiCredentialService(db(), { secretKey: testEnv().gateway.ctx.config.secretKey, allowPrivate: EMPTY_ALLOW_LIST });
    const principal = { kind: "api_key", workspaceId: t.ws.id } as ApiKeyPrincipal;
    let refused: unknown;
    try {
      await strict.create(principal, { provider: "vendorone_compatible", label: "x", api_key: API_KEY, base_url: "http://127.0.0.1:11434/v1" });
    } catch (err) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(ApiError);
    expect((refused as ApiError).code).to.equal("validation_failed");
  });

  it("is 402 off-plan, naming the feature", async () => {
    const t = await aiWorkspace("free");
    const res = await t.createCredential({ provider: "vendortwo", label: "l", api_key: API_KEY });
    expect(res.status).to.equal(402);
    expect(res.json).to.include({ code: "plan_required", feature: "ai" });
    expect((await t.listCredentials()).json.data).to.deep.equal([]);
  });

  it("deletes with 204, wipes the sealed key, then 404; an id that is no UUID is 404", async () => {
    const t = await aiWorkspace();
    const a = await t.createCredential({ provider: "vendortwo", label: "a", api_key: API_KEY });
    const b = await t.createCredential({ provider: "vendortwo", label: "b", api_key: API_KEY });
    expect(((await t.listCredentials()).json.data as { id: string }[]).map((c) => c.id)).to.deep.equal([b.json.id, a.json.id]);
    expect((await t.deleteCredential(a.json.id as string)).status).to.equal(204);
    expect((await t.deleteCredential(a.json.id as string)).status).to.equal(404);
    expect((await t.deleteCredential("not-a-uuid")).status).to.equal(404);
    expect(((await t.listCredentials()).json.data as { id: string }[]).map((c) => c.id)).to.deep.equal([b.json.id]);
    const [row] = (await db().query(`SELECT api_key_sealed FROM ai_credentials WHERE id = $1`, [a.json.id])) as { api_key_sealed: string }[];
    expect(row!.api_key_sealed).to.equal("");
  });
});

describe("AI policies", () => {
  const minimal = (credential_id: string) => ({ credential_id, enabled: true, mode: "draft", model: "model-a", system_instruction: "Be brief." });

  it("is 404 without a policy, takes the documented defaults, and PUT replaces the whole policy", async () => {
    const t = await aiWorkspace();
    await t.connection("shop");
    expect((await t.getPolicy("shop")).status).to.equal(404);
    expect((await t.getPolicy("nowhere")).status).to.equal(404);
    const cred = await t.createCredential({ provider: "vendortwo", label: "l", api_key: API_KEY });
    const set = await t.setPolicy("shop", minimal(cred.json.id as string));
    expect(set.status, set.text).to.equal(200);
    const { updated_at, ...rest } = set.json;
    expect(rest).to.deep.equal({
      connection: "shop",
      ...minimal(cred.json.id as string),
      max_context_bytes: 8192,
      max_output_tokens: 300,
      monthly_cost_limit_micros: null,
      input_cost_micros_per_million: 0,
      output_cost_micros_per_million: 0,
    });
    expect(Date.parse(updated_at as string)).to.be.closeTo(Date.now(), 60_000);
    expect((await t.getPolicy("shop")).json).to.deep.equal(set.json);

    const full = {
      ...minimal(cred.json.id as string),
      mode: "auto",
      max_context_bytes: 1000,
      max_output_tokens: 100,
      monthly_cost_limit_micros: 5,
      input_cost_micros_per_million: 3,
      output_cost_micros_per_million: 15,
    };
    expect((await t.setPolicy("shop", full)).json).to.include(full);
    // Omitted optional fields go back to their defaults: PUT replaces, it does not merge.
    expect((await t.setPolicy("shop", minimal(cred.json.id as string))).json).to.include({ mode: "draft", max_context_bytes: 8192, monthly_cost_limit_micros: null });
    expect((await t.setPolicy("nowhere", minimal(cred.json.id as string))).status).to.equal(404);
  });

  it("lists the workspace's policies by connection, leaving out connections without one, deleted ones and other workspaces'", async () => {
    const t = await aiWorkspace();
    const other = await aiWorkspace();
    for (const slug of ["b-desk", "a-desk", "no-ai", "gone"]) await t.connection(slug);
    await other.connection("a-desk");
    const cred = await t.createCredential({ provider: "vendortwo", label: "l", api_key: API_KEY });
    const otherCred = await other.createCredential({ provider: "vendortwo", label: "l", api_key: API_KEY });
    expect((await t.listPolicies()).json).to.deep.equal({ data: [] });
    const b = await t.setPolicy("b-desk", { ...minimal(cred.json.id as string), enabled: false });
    const a = await t.setPolicy("a-desk", minimal(cred.json.id as string));
    expect((await t.setPolicy("gone", minimal(cred.json.id as string))).status).to.equal(200);
    expect((await other.setPolicy("a-desk", { ...minimal(otherCred.json.id as string), model: "theirs" })).status).to.equal(200);
    expect((await http("DELETE", "/v1/connections/gone", { headers: t.auth })).status).to.equal(204);
    const listed = await t.listPolicies();
    expect(listed.status, listed.text).to.equal(200);
    // Each item is what GET of that connection's policy answers, by slug.
    expect(listed.json).to.deep.equal({ data: [a.json, b.json] });
    const theirs = (await other.listPolicies()).json.data as { connection: string; model: string }[];
    expect(theirs.map((p) => [p.connection, p.model])).to.deep.equal([["a-desk", "theirs"]]);
  });

  it("checks every field at its limits", async () => {
    const t = await aiWorkspace();
    await t.connection("limits");
    const cred = await t.createCredential({ provider: "vendorone_compatible", label: "l", api_key: API_KEY });
    const base = minimal(cred.json.id as string);
    const status = async (change: Record<string, unknown>) => {
      const res = await t.setPolicy("limits", { ...base, ...change });
      return res.status;
    };
    const cases: [string, unknown[], unknown[]][] = [
      ["max_context_bytes", [256, 32768], [255, 32769, 1000.5, "1000"]],
      ["max_output_tokens", [32, 2000], [31, 2001]],
      ["monthly_cost_limit_micros", [0, null, MAX_SAFE_INT], [-1, MAX_SAFE_INT + 1]],
      ["input_cost_micros_per_million", [0, MAX_SAFE_INT], [-1, MAX_SAFE_INT + 1, null]],
      ["output_cost_micros_per_million", [0, MAX_SAFE_INT], [-1, MAX_SAFE_INT + 1, null]],
      ["model", ["m", "m".repeat(120)], ["", "m".repeat(121)]],
      // Characters are code points: 4000 emoji (8000 UTF-16 units) are 4000 characters.
      ["system_instruction", ["s", "s".repeat(4000), "😀".repeat(4000)], ["", "s".repeat(4001), "😀".repeat(4001)]],
      ["mode", ["draft", "auto"], ["manual"]],
      ["enabled", [true, false], ["yes"]],
      ["credential_id", [], ["not-a-uuid"]],
    ];
    for (const [field, valid, invalid] of cases) {
      for (const v of valid) expect(await status({ [field]: v }), `${field}=${String(v)}`).to.equal(200);
      for (const v of invalid) expect(await status({ [field]: v }), `${field}=${String(v)}`).to.equal(400);
    }
    // The largest cost survives the bigint column exactly.
    await t.setPolicy("limits", { ...base, output_cost_micros_per_million: MAX_SAFE_INT, monthly_cost_limit_micros: MAX_SAFE_INT });
    expect((await t.getPolicy("limits")).json).to.include({ output_cost_micros_per_million: MAX_SAFE_INT, monthly_cost_limit_micros: MAX_SAFE_INT });
    for (const field of ["credential_id", "enabled", "mode", "model", "system_instruction"]) {
      const { [field]: _dropped, ...without } = base as Record<string, unknown>;
      expect((await t.setPolicy("limits", without)).status, `without ${field}`).to.equal(400);
    }
    expect(await status({ extra: true })).to.equal(400);
  });

  it("names only a live credential of the workspace; deleting it later keeps the policy", async () => {
    const t = await aiWorkspace();
    const other = await aiWorkspace();
    await t.connection("cred");
    const theirs = await other.createCredential({ provider: "vendortwo", label: "l", api_key: API_KEY });
    const refused = await t.setPolicy("cred", minimal(theirs.json.id as string));
    expect(refused.status).to.equal(400);
    expect(JSON.stringify(refused.json.errors)).to.include("credential_id");
    const mine = await t.createCredential({ provider: "vendortwo", label: "l", api_key: API_KEY });
    expect((await t.setPolicy("cred", minimal(mine.json.id as string))).status).to.equal(200);
    expect((await t.deleteCredential(mine.json.id as string)).status).to.equal(204);
    expect((await t.getPolicy("cred")).json.credential_id).to.equal(mine.json.id);
    expect((await t.setPolicy("cred", minimal(mine.json.id as string))).status).to.equal(400);
  });

  it("is 402 off-plan for PUT; GET stays 404", async () => {
    const t = await aiWorkspace("free");
    await t.connection("free-one");
    const res = await t.setPolicy("free-one", minimal("00000000-0000-4000-8000-000000000000"));
    expect(res.status).to.equal(402);
    expect(res.json).to.include({ code: "plan_required", feature: "ai" });
    expect((await t.getPolicy("free-one")).status).to.equal(404);
  });
});
