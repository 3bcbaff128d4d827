// The security rules of every route, generated from the contract at run time: a route gets these
// tests by being in the contract, and its security metadata decides which apply.
//   - no credential → 401;
//   - a credential of the wrong kind (an API key where a session is needed, a session where a key
//     is needed, an OAuth access token anywhere but the tool endpoint) → 401;
//   - an API key without the route's scope → 403 insufficient_scope;
//   - every path id of workspace B, with workspace A's credential(s) → 404, and B's data unchanged;
//   - every change a session may make, made with B's own session cookie but without proof that it
//     comes from the dashboard's origin (a form, a text/plain body, no body; no Origin) → 403
//     cross_site_request, and nothing of B changed.
// Public routes (auth: none) have none.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { AppRoute } from "@ts-rest/core";
import { contract, ISSUABLE_SCOPES, routesOf, type RouteMetadata } from "../contract/index.js";
import { expectOk } from "../sdk/src/index.js";
import { fromDashboard, http, newWorkspace, type TestWorkspace } from "./support/actors.js";
import { obtainTokens } from "./support/oauth.js";
import { pairConnection, sandbox, uniquePhone } from "./support/sandbox.js";
import { waitFor } from "./support/wait.js";
import { testEnv } from "./setup.js";

interface Listed {
  /** e.g. messages.cancel */
  name: string;
  group: string;
  route: AppRoute;
  meta: RouteMetadata;
  params: string[];
}

const ROUTES: Listed[] = routesOf(contract).map(({ name, route }) => ({
  name,
  group: name.split(".")[0]!,
  route,
  meta: route.metadata as RouteMetadata,
  params: [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!),
}));

type Credential = { kind: "key"; key: string } | { kind: "session"; cookie: string } | { kind: "oauth"; token: string };
type CredentialKind = Credential["kind"];
const KIND_NAMES: Record<CredentialKind, string> = { key: "an API key", session: "a session", oauth: "an OAuth access token" };

function headersOf(credential: Credential | null): Record<string, string> {
  if (!credential) return {};
  if (credential.kind === "session") return fromDashboard(credential.cookie);
  return { authorization: `Bearer ${credential.kind === "key" ? credential.key : credential.token}` };
}

/** The kinds of credential each kind of route takes; an absent kind is the wrong kind. */
const ACCEPTS: Record<RouteMetadata["security"]["auth"], Credential["kind"][]> = {
  none: [],
  key: ["key"],
  session: ["session"],
  key_or_session: ["key", "session"],
  // An API key with mcp:read, or an OAuth access token: the only routes a token opens.
  mcp: ["key", "oauth"],
};

function hasBodySchema(route: AppRoute): route is AppRoute & { body: { safeParse(v: unknown): { success: boolean } } } {
  const body = (route as { body?: unknown }).body;
  return typeof body === "object" && body !== null && typeof (body as { safeParse?: unknown }).safeParse === "function";
}

/**
 * Bodies that pass validation, for routes whose 404 is tested (validation runs before the
 * handler finds nothing). A new such route fails its 404 test until it has one here.
 */
const SAMPLE_BODIES: Record<string, unknown> = {
  "messages.reschedule": { send_at: new Date(Date.now() + 7 * 86_400_000).toISOString() },
  "team.update": { role: "developer" },
  "connections.update": { transport: "sandbox" },
  "groups.create": { subject: "sec", participants: ["+15550001111"] },
  "groups.update": { subject: "taken over" },
  "groups.participants": { action: "remove", participants: ["+15550001111"] },
  "schedules.preview": { timezone: "UTC", recurrence: { type: "daily", hour: 9, minute: 0 } },
  "ai.setPolicy": { credential_id: "00000000-0000-4000-8000-000000000000", enabled: true, mode: "draft", model: "m", system_instruction: "s" },
  "conversations.reply": { body: "x" },
  "conversations.react": { emoji: "👍" },
  "conversations.edit": { body: "x" },
  "conversations.presence": { state: "typing" },
  "connections.settings": { proxy_url: null },
};

/** Workspace B's value for each of the route's path parameters. */
function bValues(listed: Listed): Record<string, string> {
  return Object.fromEntries(
    listed.params.map((p) => {
      const value = fixture.bIds[`${listed.name}.${p}`] ?? fixture.bIds[`${listed.group}.${p}`];
      if (value === undefined) throw new Error(`no workspace-B value for :${p} of ${listed.name}: add one to workspaceB()`);
      return [p, value];
    }),
  );
}

function pathOf(listed: Listed, values: Record<string, string> | null): string {
  return listed.route.path.replace(/:(\w+)/g, (_, p: string) => encodeURIComponent(values?.[p] ?? "x"));
}

function request(listed: Listed, values: Record<string, string> | null, credential: Credential | null) {
  const path = pathOf(listed, values);
  const hasBody = hasBodySchema(listed.route);
  const body = hasBody ? (SAMPLE_BODIES[listed.name] ?? {}) : undefined;
  return http(listed.route.method, path, { ...(body !== undefined ? { body } : {}), headers: headersOf(credential) });
}

/**
 * What another site's page can send with the member's cookie and no CORS preflight: a form, a
 * text/plain body (a form with enctype=text/plain, which can carry JSON-looking text), or nothing;
 * never an Origin or Sec-Fetch-Site naming the gateway.
 */
function crossSiteBodies(listed: Listed): { label: string; headers: Record<string, string>; body?: string }[] {
  const sample = (SAMPLE_BODIES[listed.name] ?? { email: "attacker@example.test", role: "admin", slug: "attacker" }) as Record<string, unknown>;
  const fields = Object.entries(sample).map(([k, v]): [string, string] => [k, typeof v === "string" ? v : JSON.stringify(v)]);
  return [
    { label: "a form", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields).toString() },
    { label: "a text/plain body", headers: { "content-type": "text/plain" }, body: JSON.stringify(sample) },
    { label: "no body", headers: {} },
  ];
}

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Everything of a workspace that a change through the API could alter, read from its database. */
async function stateOf(b: Fixture): Promise<unknown[]> {
  const db = testEnv().gateway.ctx.db;
  const ws = b.b.id;
  const queries: [string, unknown[]][] = [
    [`SELECT * FROM workspaces WHERE id = $1`, [ws]],
    [`SELECT * FROM members WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT * FROM invitations WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT id, expires_at FROM sessions WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT id, name, scopes, revoked_at, digest FROM api_keys WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT id, slug, name, state, deleted_at FROM connections WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT g.id FROM pairing_grants g JOIN connections c ON c.id = g.connection_id WHERE c.workspace_id = $1 ORDER BY g.id`, [ws]],
    [`SELECT id, status, send_at FROM messages WHERE id = $1`, [b.bIds["messages.id"]]],
    [`SELECT id, name, status, recurrence, message, updated_at FROM schedules WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT * FROM webhook_endpoints WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT id, label, deleted_at FROM ai_credentials WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT * FROM ai_policies WHERE workspace_id = $1 ORDER BY connection_id`, [ws]],
    [`SELECT id, scopes, revoked_at FROM oauth_grants WHERE workspace_id = $1 ORDER BY id`, [ws]],
    [`SELECT count(*)::int AS n FROM audit_log WHERE workspace_id = $1`, [ws]],
  ];
  return Promise.all(queries.map(([sql, params]) => db.query(sql, params)));
}

interface Fixture {
  a: Record<CredentialKind, Credential> & { lacking: (scope: string) => Promise<Credential> };
  /** Workspace B's path ids: by route name and parameter first, then by resource group and parameter. */
  bIds: Record<string, string>;
  b: TestWorkspace;
  bKey: string;
}

let fixture: Fixture;
const lackingKeys = new Map<string, Credential>();

/** Workspace B with one of everything a path can name. */
async function workspaceB(): Promise<Omit<Fixture, "a">> {
  const b = await newWorkspace("enterprise");
  const issued = await b.key([...ISSUABLE_SCOPES]);
  const client = issued.client;
  const auth = { authorization: `Bearer ${issued.key}` };
  const tag = randomBytes(3).toString("hex");
  const linked = `sec-linked-${tag}`;
  const linkedPhone = uniquePhone();
  await pairConnection(client, linked, linkedPhone);
  const group = await sandbox("POST", "/groups", { phone: linkedPhone, role: "admin", subject: "sec" });
  expect(group.status).to.equal(201);
  // A connection with an open pairing grant: the QR route's two ids.
  const pairing = `sec-pairing-${tag}`;
  await expectOk(client.connections.create({ body: { slug: pairing } }));
  const grant = await expectOk(client.connections.pair({ params: { connection: pairing } }));
  const endpoint = await expectOk(client.webhooks.create({ body: { url: "http://127.0.0.1:9/hook", events: ["message.queued"] } }));
  const later = new Date(Date.now() + 86_400_000).toISOString();
  const scheduled = await http("POST", "/v1/messages/text", { body: { connection: linked, to: uniquePhone(), body: "later", send_at: later }, headers: auth });
  expect(scheduled.status).to.equal(202);
  expect((await http("POST", "/v1/messages/text", { body: { connection: linked, to: uniquePhone(), body: "now" }, headers: auth })).status).to.equal(202);
  const schedule = await http("POST", "/v1/schedules", {
    body: { name: "sec", timezone: "UTC", recurrence: { type: "daily", hour: 9, minute: 0 }, message: { connection: linked, to: "+15550001111", body: "s" } },
    headers: auth,
  });
  expect(schedule.status).to.equal(201);
  const deliveries = await waitFor(
    async () => (await expectOk(client.webhooks.listDeliveries({ params: { id: endpoint.id }, query: {} }))).data,
    (d) => d.length > 0,
    20_000,
  );
  const aiCredential = await http("POST", "/v1/ai/credentials", { body: { provider: "vendortwo", label: "sec", api_key: "sk-sec-000000" }, headers: auth });
  expect(aiCredential.status).to.equal(201);
  const policy = { credential_id: aiCredential.json.id, enabled: false, mode: "draft", model: "m", system_instruction: "b's" };
  expect((await http("PUT", `/v1/ai/policies/${pairing}`, { body: policy, headers: auth })).status).to.equal(200);
  await expectOk(b.owner.client.team.invite({ body: { email: `sec-${tag}@example.test`, role: "viewer" } }));
  await obtainTokens(b.owner.cookie);
  const authorizations = await expectOk(b.owner.client.oauth.listAuthorizations());
  const team = await expectOk(b.owner.client.team.list());
  const invitation = team.invitations[0]!.id;
  return {
    b,
    bKey: issued.key,
    bIds: {
      "messages.id": scheduled.json.id as string,
      "connections.connection": pairing,
      "connections.grantId": grant.grant_id,
      "schedules.id": schedule.json.id as string,
      "webhooks.id": endpoint.id,
      "webhooks.deliveryId": deliveries[0]!.id,
      "workspace.id": issued.id,
      "team.cancelInvitation.id": invitation,
      "team.id": team.members[0]!.id,
      "oauth.id": authorizations.data[0]!.id,
      "ai.id": aiCredential.json.id as string,
      "ai.connection": pairing,
      "groups.connection": linked,
      "groups.group": group.json.id as string,
      "conversations.id": scheduled.json.id as string,
      "conversations.connection": linked,
      "conversations.chat": "+15550001111",
    },
  };
}

describe("security rules of every contract route", () => {
  before(async function () {
    this.timeout(60_000);
    const a = await newWorkspace("enterprise");
    const aKey = await a.key([...ISSUABLE_SCOPES]);
    fixture = {
      ...(await workspaceB()),
      a: {
        key: { kind: "key", key: aKey.key },
        session: { kind: "session", cookie: a.owner.cookie },
        oauth: { kind: "oauth", token: (await obtainTokens(a.owner.cookie)).access },
        async lacking(scope) {
          let credential = lackingKeys.get(scope);
          if (!credential) {
            credential = { kind: "key", key: (await a.key(ISSUABLE_SCOPES.filter((s) => s !== scope))).key };
            lackingKeys.set(scope, credential);
          }
          return credential;
        },
      },
    };
  });

  it("lists every route of the contract", () => {
    expect(ROUTES.length).to.be.greaterThan(50);
    for (const r of ROUTES) expect(Object.keys(ACCEPTS), r.name).to.include(r.meta.security.auth);
  });

  for (const listed of ROUTES) {
    const { security } = listed.meta;
    if (security.auth === "none") continue;
    const label = `${listed.route.method} ${listed.route.path} (${listed.name})`;
    describe(label, () => {
      it("answers 401 without a credential", async () => {
        const res = await request(listed, null, null);
        expect(res.status, res.text).to.equal(401);
        expect(res.json.code).to.equal("unauthorized");
      });

      const wrongKinds = (["key", "session", "oauth"] as const).filter((k) => !ACCEPTS[security.auth].includes(k));
      for (const kind of wrongKinds) {
        it(`answers 401 to ${KIND_NAMES[kind]}, the wrong kind of credential`, async () => {
          const res = await request(listed, null, fixture.a[kind]);
          expect(res.status, res.text).to.equal(401);
        });
      }

      const scope = "scope" in security ? security.scope : undefined;
      if (scope && ACCEPTS[security.auth].includes("key")) {
        it(`answers 403 to an API key without ${scope}`, async () => {
          const res = await request(listed, null, await fixture.a.lacking(scope));
          expect(res.status, res.text).to.equal(403);
          expect(res.json).to.include({ code: "insufficient_scope", required_scope: scope });
        });
      }

      if (listed.params.length) {
        for (const kind of ACCEPTS[security.auth]) {
          it(`answers 404 to workspace A's credential (${KIND_NAMES[kind]}) for workspace B's ids`, async () => {
            const values = bValues(listed);
            if (hasBodySchema(listed.route) && SAMPLE_BODIES[listed.name] !== undefined) {
              expect(listed.route.body.safeParse(SAMPLE_BODIES[listed.name]).success, `sample body of ${listed.name}`).to.equal(true);
            }
            const res = await request(listed, values, fixture.a[kind]);
            expect(res.status, res.text).to.equal(404);
            expect(res.json.code).to.equal("not_found");
          });
        }
      }

      if (MUTATING.has(listed.route.method) && ACCEPTS[security.auth].includes("session")) {
        it("refuses a change with workspace B's own session but no sign of the dashboard's origin, and changes nothing", async () => {
          const path = pathOf(listed, listed.params.length ? bValues(listed) : null);
          const before = await stateOf(fixture);
          for (const variant of crossSiteBodies(listed)) {
            const res = await fetch(testEnv().baseUrl + path, {
              method: listed.route.method,
              headers: { cookie: fixture.b.owner.cookie, ...variant.headers },
              ...(variant.body !== undefined ? { body: variant.body } : {}),
            });
            const problem = (await res.json()) as { code?: string };
            expect(res.status, `${variant.label}: ${JSON.stringify(problem)}`).to.equal(403);
            expect(problem.code).to.equal("cross_site_request");
          }
          expect(await stateOf(fixture)).to.deep.equal(before);
        });
      }
    });
  }

  after(async () => {
    if (!fixture) return;
    // Nothing that workspace A asked for touched workspace B.
    const auth = { authorization: `Bearer ${fixture.bKey}` };
    const message = await http("GET", `/v1/messages/${fixture.bIds["messages.id"]}`, { headers: auth });
    expect(message.json).to.include({ status: "scheduled" });
    const schedule = await http("GET", `/v1/schedules/${fixture.bIds["schedules.id"]}`, { headers: auth });
    expect(schedule.json).to.include({ status: "active" });
    const connection = await http("GET", `/v1/connections/${fixture.bIds["connections.connection"]}`, { headers: auth });
    expect(connection.status).to.equal(200);
    const credentials = await http("GET", "/v1/ai/credentials", { headers: auth });
    expect((credentials.json.data as { id: string }[]).map((c) => c.id)).to.deep.equal([fixture.bIds["ai.id"]]);
    const policy = await http("GET", `/v1/ai/policies/${fixture.bIds["ai.connection"]}`, { headers: auth });
    expect(policy.json).to.include({ system_instruction: "b's", enabled: false });
    expect((await http("GET", "/v1/whoami", { headers: auth })).status).to.equal(200);
    const group = await http("GET", `/v1/connections/${fixture.bIds["groups.connection"]}/groups/${encodeURIComponent(fixture.bIds["groups.group"]!)}`, { headers: auth });
    expect(group.json).to.include({ subject: "sec", size: 1 });
  });
});
