import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf, sessionOf } from "../http/principal.js";
import { ApiError } from "../http/errors.js";
import { apiKeyView, type ApiKeyService } from "../api-keys/service.js";
import type { WorkspaceService } from "./service.js";

const s = initServer();

export function workspaceRouter(workspaces: WorkspaceService, keys: ApiKeyService) {
  return s.router(contract.workspace, {
    whoami: async ({ res }) => {
      const p = principalOf(res);
      if (p.kind !== "api_key") throw new ApiError("unauthorized");
      const workspace = await workspaces.get(p.workspaceId);
      return {
        status: 200,
        body: {
          principal: { type: "api_key", id: p.keyId, name: p.name, prefix: p.prefix, environment: p.environment },
          scopes: p.scopes,
          workspace: { id: workspace.id, name: workspace.name, plan: workspace.planId },
        },
      };
    },
    get: async ({ res }) => {
      const p = sessionOf(res);
      return { status: 200, body: await workspaces.overview(p.workspaceId, p.role) };
    },
    usage: async ({ query, res }) => {
      const p = sessionOf(res);
      return { status: 200, body: await workspaces.usage(p.workspaceId, query.days) };
    },
    createApiKey: async ({ body, res }) => {
      const issued = await keys.issue(sessionOf(res), body);
      return { status: 201, body: { ...apiKeyView(issued.key), key: issued.plaintext } };
    },
    listApiKeys: async ({ res }) => {
      return { status: 200, body: { data: (await keys.list(sessionOf(res))).map(apiKeyView) } };
    },
    revokeApiKey: async ({ params, res }) => {
      return { status: 200, body: apiKeyView(await keys.revoke(sessionOf(res), params.id)) };
    },
    rotateApiKey: async ({ params, res }) => {
      const issued = await keys.rotate(sessionOf(res), params.id);
      return { status: 200, body: { ...apiKeyView(issued.key), key: issued.plaintext } };
    },
  });
}
