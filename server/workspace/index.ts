// The workspace folder as the composition root builds it: workspaces and their API keys
// (server/api-keys/), and the routes of both.
import type { DataSource } from "typeorm";
import { ApiKeyService } from "../api-keys/service.js";
import type { ApiKeyCache } from "../auth/key-cache.js";
import { workspaceRouter } from "./handlers.js";
import { WorkspaceService } from "./service.js";

export function createWorkspace(deps: { db: DataSource; keyCache: ApiKeyCache }) {
  const workspaces = new WorkspaceService(deps.db, deps.keyCache);
  const apiKeys = new ApiKeyService(deps.db, deps.keyCache);
  return { workspaces, apiKeys, router: workspaceRouter(workspaces, apiKeys) };
}
