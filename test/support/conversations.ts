// A connected sandbox connection and the contacts around it, for the conversation tests.
import { randomBytes } from "node:crypto";
import type { Message, MessageWithTimeline } from "../../contract/index.js";
import { expectOk } from "../../sdk/src/index.js";
import { testEnv } from "../setup.js";
import { newWorkspace, type Client, type TestWorkspace } from "./actors.js";
import { pairConnection, sandbox, uniquePhone } from "./sandbox.js";
import { waitFor } from "./wait.js";

export interface Linked {
  ws: TestWorkspace;
  client: Client;
  key: string;
  slug: string;
  /** The linked number. */
  phone: string;
}

export async function linkedConnection(): Promise<Linked> {
  const ws = await newWorkspace();
  const { client, key } = await ws.key(["messages:read", "messages:write", "connections:read", "connections:write"]);
  const slug = `conv-${randomBytes(3).toString("hex")}`;
  const phone = uniquePhone();
  await pairConnection(client, slug, phone);
  return { ws, client, key, slug, phone };
}

/** A contact writes to the linked number; answers the inbound message once the gateway has it. */
export async function inboundFrom(c: Linked, from: string, content: Record<string, unknown> = { body: "hello" }): Promise<Message> {
  const res = await sandbox("POST", "/inbound", { to: c.phone, from, ...content });
  if (res.status !== 202) throw new Error(`inbound answered ${res.status}: ${JSON.stringify(res.json)}`);
  const providerId = res.json.provider_message_id as string;
  const page = await waitFor(
    () => expectOk(c.client.messages.list({ query: { connection: c.slug, direction: "inbound", limit: 100 } })),
    (p) => p.data.some((m) => m.provider_message_id === providerId),
  );
  return page.data.find((m) => m.provider_message_id === providerId)!;
}

/** Waits until the message satisfies `predicate`. */
export function waitForMessage(c: Linked, id: string, predicate: (m: MessageWithTimeline) => boolean): Promise<MessageWithTimeline> {
  return waitFor(() => expectOk(c.client.messages.get({ params: { id } })), predicate);
}

/** What the network got for `to` from the gateway (GET /sandbox/v1/received). */
export async function receivedBy(to: string): Promise<Record<string, unknown>[]> {
  return (await sandbox("GET", `/received?to=${encodeURIComponent(to)}`)).json.data as Record<string, unknown>[];
}

/** Events of the workspace of one type, oldest first (the outbox every webhook is fanned out from). */
export async function eventsOf(workspaceId: string, type: string): Promise<{ data: Record<string, unknown> }[]> {
  const found = (await testEnv().gateway.ctx.db.query(`SELECT payload FROM events WHERE workspace_id = $1 AND type = $2 ORDER BY created_at, id`, [
    workspaceId,
    type,
  ])) as { payload: { data: Record<string, unknown> } }[];
  return found.map((r) => r.payload);
}

export { uniquePhone };
