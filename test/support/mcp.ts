// The tool endpoint as assistants reach it: the official SDK's client (v2) on either protocol
// revision, with a bearer credential (an API key or an OAuth access token).
import { Client, StreamableHTTPClientTransport, type ClientOptions } from "@modelcontextprotocol/client";
import { testEnv } from "../setup.js";

/** The revisions the endpoint serves; the newest first. */
export const REVISIONS = ["2026-07-28", "2025-11-25"] as const;
export type Revision = (typeof REVISIONS)[number];

export const READ_TOOLS = [
  "whoami",
  "list_connections",
  "get_connection",
  "list_groups",
  "get_group",
  "check_number",
  "list_messages",
  "get_message",
  "list_schedules",
  "get_schedule",
  "get_usage",
  "list_webhook_deliveries",
  "list_chats",
];
export const WRITE_TOOLS = ["send_message", "cancel_message", "react_to_message", "mark_read", "pause_schedule", "resume_schedule", "cancel_schedule"];

/**
 * A connected client on `revision`: 2026-07-28 pinned (server/discover, the per-request
 * envelope, no initialize), 2025-11-25 through the initialize handshake. Fails when the endpoint
 * negotiates anything else.
 */
export async function mcpClient(bearer: string, revision: Revision, options: ClientOptions = {}): Promise<Client> {
  const client = new Client(
    { name: "svc-gateway-test", version: "1.0.0" },
    { ...options, versionNegotiation: { mode: revision === "2026-07-28" ? { pin: revision } : "legacy" } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${testEnv().baseUrl}/v1/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${bearer}` } },
  });
  await client.connect(transport);
  const negotiated = client.getNegotiatedProtocolVersion();
  if (negotiated !== revision) throw new Error(`the endpoint negotiated ${negotiated}, not ${revision}`);
  return client;
}

/** Messages of a workspace, counted in the database: what a preview must not change. */
export async function messageCount(workspaceId: string): Promise<number> {
  const [row] = (await testEnv().gateway.ctx.db.query(`SELECT count(*)::int AS n FROM messages WHERE workspace_id = $1`, [workspaceId])) as { n: number }[];
  return row!.n;
}
