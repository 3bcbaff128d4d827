// The whole API contract: one nested router per resource. The server, the SDK and the OpenAPI
// document (server/openapi/document.ts) all derive from this object.
import { isAppRoute, type AppRoute, type AppRouter } from "@ts-rest/core";
import { ai } from "./ai.js";
import { auth } from "./auth.js";
import { connections } from "./connections.js";
import { conversations } from "./conversations.js";
import { events } from "./events.js";
import { groups } from "./groups.js";
import { mcp } from "./mcp.js";
import { messages } from "./messages.js";
import { oauth } from "./oauth.js";
import { ops } from "./ops.js";
import { schedules } from "./schedules.js";
import { team } from "./team.js";
import { webhooks } from "./webhooks.js";
import { workspace } from "./workspace.js";

/**
 * The resources' routers, each strict about its status codes. Named field by field so that the
 * SDK's declarations refer to each resource's router instead of spelling the whole contract out
 * (longer than the compiler writes: TS7056).
 */
export type Contract = {
  messages: typeof messages;
  conversations: typeof conversations;
  connections: typeof connections;
  groups: typeof groups;
  schedules: typeof schedules;
  webhooks: typeof webhooks;
  events: typeof events;
  ai: typeof ai;
  workspace: typeof workspace;
  team: typeof team;
  auth: typeof auth;
  oauth: typeof oauth;
  mcp: typeof mcp;
  ops: typeof ops;
};

export const contract: Contract = { messages, conversations, connections, groups, schedules, webhooks, events, ai, workspace, team, auth, oauth, mcp, ops };

/** Every route of `router`, with its dotted name (`messages.cancel`). */
export function routesOf(router: AppRouter, at: string[] = []): { name: string; route: AppRoute }[] {
  return Object.entries(router).flatMap(([key, value]) => (isAppRoute(value) ? [{ name: [...at, key].join("."), route: value }] : routesOf(value, [...at, key])));
}

export * from "./common.js";
export * from "./messages.js";
export * from "./conversations.js";
export * from "./connections.js";
export * from "./groups.js";
export * from "./schedules.js";
export * from "./webhooks.js";
export * from "./events.js";
export * from "./ai.js";
export * from "./workspace.js";
export * from "./team.js";
export * from "./auth.js";
export * from "./oauth.js";
export * from "./mcp.js";
export * from "./ops.js";
export * from "./permissions.js";
