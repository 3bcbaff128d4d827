// The whole API contract: one nested router per resource. The server, the SDK and the OpenAPI
// document (server/openapi/document.ts) all derive from this object.
import { initContract, isAppRoute, type AppRoute, type AppRouter } from "@ts-rest/core";
import { ai } from "./ai.js";
import { auth } from "./auth.js";
import { connections } from "./connections.js";
import { groups } from "./groups.js";
import { conversations } from "./conversations.js";
import { mcp } from "./mcp.js";
import { messages } from "./messages.js";
import { oauth } from "./oauth.js";
import { ops } from "./ops.js";
import { schedules } from "./schedules.js";
import { team } from "./team.js";
import { webhooks } from "./webhooks.js";
import { workspace } from "./workspace.js";

const c = initContract();

const routers = { messages, conversations, connections, groups, schedules, webhooks, ai, workspace, team, auth, oauth, mcp, ops };
// Spelled out so that declaration files name each resource's router instead of expanding the
// whole contract (which exceeds what the compiler serializes); every router is already strict.
export const contract: {
  messages: typeof messages;
  conversations: typeof conversations;
  connections: typeof connections;
  groups: typeof groups;
  schedules: typeof schedules;
  webhooks: typeof webhooks;
  ai: typeof ai;
  workspace: typeof workspace;
  team: typeof team;
  auth: typeof auth;
  oauth: typeof oauth;
  mcp: typeof mcp;
  ops: typeof ops;
} = c.router(routers, { strictStatusCodes: true });
export type Contract = typeof contract;

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
export * from "./ai.js";
export * from "./workspace.js";
export * from "./team.js";
export * from "./auth.js";
export * from "./oauth.js";
export * from "./mcp.js";
export * from "./ops.js";
export * from "./permissions.js";
