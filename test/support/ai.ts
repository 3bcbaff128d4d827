// A connection with an AI policy answering through a loopback vendor (test/support/vendors.ts):
// paired in the sandbox, its credential and policy set over the API the way an operator sets them.
import { randomBytes } from "node:crypto";
import type { AiPolicyInput, AiRun } from "../../contract/index.js";
import { newId } from "../../server/ids.js";
import { testEnv } from "../setup.js";
import { http, newWorkspace, type Client, type TestWorkspace } from "./actors.js";
import { pairBaileys } from "./baileys.js";
import { pairConnection, sandbox, uniquePhone } from "./sandbox.js";
import type { VendorServer } from "./vendors.js";
import { waitFor } from "./wait.js";

export interface AiConnection {
  ws: TestWorkspace;
  client: Client;
  auth: Record<string, string>;
  slug: string;
  connectionId: string;
  /** The linked number contacts write to. */
  linked: string;
  credentialId: string;
  setPolicy(changes?: Partial<AiPolicyInput>): Promise<void>;
  /** A contact writes to the linked number (POST /sandbox/v1/inbound). */
  inbound(from: string, body: string | { body?: string; media?: unknown; location?: unknown; group?: string }): Promise<string>;
  /** The connection's runs, newest first (GET /v1/ai/runs?connection=). */
  runs(): Promise<AiRun[]>;
  /** Waits until the connection has `n` runs; answers them newest first. */
  waitRuns(n: number, timeoutMs?: number): Promise<AiRun[]>;
}

export const SYSTEM = "You answer for Example Shop. Be brief.";

/** The test gateway's AI_DEBOUNCE_MS (test/setup.ts): how long a burst of a contact's messages is gathered. */
export const debounceMs = (): number => testEnv().gateway.ctx.config.ai.debounceMs;

/** `engine: "baileys"` pairs through the Baileys engine's stand-in socket instead of the sandbox (`inbound` is then the sandbox's only). */
export async function aiConnection(
  vendor: VendorServer,
  provider: "vendorone_compatible" | "vendortwo",
  policy: Partial<AiPolicyInput> = {},
  options: { engine?: "sandbox" | "baileys" } = {},
): Promise<AiConnection> {
  const ws = await newWorkspace("pro");
  const issued = await ws.key(["ai:read", "ai:write", "messages:read", "messages:write", "connections:read", "connections:write", "webhooks:read", "webhooks:write"]);
  const auth = { authorization: `Bearer ${issued.key}` };
  const slug = `ai-${randomBytes(4).toString("hex")}`;
  const linked = uniquePhone("+1552");
  if (options.engine === "baileys") await pairBaileys(issued.client, slug, linked);
  else await pairConnection(issued.client, slug, linked);
  const credential = await http("POST", "/v1/ai/credentials", { headers: auth, body: { provider, label: "loopback", api_key: `sk-loopback-${randomBytes(8).toString("hex")}`, base_url: vendor.url } });
  if (credential.status !== 201) throw new Error(`credential: ${credential.status} ${credential.text}`);
  const [row] = (await testEnv().gateway.ctx.db.query(`SELECT id FROM connections WHERE slug = $1 AND workspace_id = $2 AND deleted_at IS NULL`, [slug, ws.id])) as { id: string }[];
  const base: AiPolicyInput = { credential_id: credential.json.id as string, enabled: true, mode: "auto", model: "test-model", system_instruction: SYSTEM, ...policy };
  const t: AiConnection = {
    ws,
    client: issued.client,
    auth,
    slug,
    connectionId: row!.id,
    linked,
    credentialId: credential.json.id as string,
    async setPolicy(changes = {}) {
      const res = await http("PUT", `/v1/ai/policies/${slug}`, { headers: auth, body: { ...base, ...changes } });
      if (res.status !== 200) throw new Error(`policy: ${res.status} ${res.text}`);
    },
    async inbound(from, body) {
      const content = typeof body === "string" ? { body } : body;
      const res = await sandbox("POST", "/inbound", { to: linked, from, ...content });
      if (res.status !== 202) throw new Error(`inbound: ${res.status} ${JSON.stringify(res.json)}`);
      return res.json.provider_message_id as string;
    },
    async runs() {
      const res = await http("GET", `/v1/ai/runs?connection=${slug}&limit=100`, { headers: auth });
      if (res.status !== 200) throw new Error(`runs: ${res.status} ${res.text}`);
      return res.json.data as AiRun[];
    },
    waitRuns(n, timeoutMs = 20_000) {
      return waitFor(() => t.runs(), (r) => r.length >= n, timeoutMs, 100);
    },
  };
  await t.setPolicy();
  return t;
}

/** Inserts finished runs directly (to set up ceilings and pages). */
export async function insertRuns(t: Pick<AiConnection, "ws" | "connectionId">, n: number, fields: { outcome?: string; cost?: bigint | number; createdAt?: string } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = newId("airun");
    ids.push(id);
    await testEnv().gateway.ctx.db.query(
      `INSERT INTO ai_runs (id, workspace_id, connection_id, message_id, contact, mode, model, state, outcome, cost_micros, created_at)
       VALUES ($1, $2, $3, $4, '+15550000000', 'auto', 'test-model', 'done', $5, $6, COALESCE($7::timestamptz, clock_timestamp()))`,
      [id, t.ws.id, t.connectionId, newId("msg"), fields.outcome ?? "replied", String(fields.cost ?? 0), fields.createdAt ?? null],
    );
  }
  return ids;
}

/** What the sandbox contact `to` has received (GET /sandbox/v1/received). */
export async function received(to: string): Promise<{ body: string | null; message_id: string; delivered_at: string }[]> {
  const res = await sandbox("GET", `/received?to=${encodeURIComponent(to)}`);
  return (res.json.data ?? []) as { body: string | null; message_id: string; delivered_at: string }[];
}

export { uniquePhone };
