import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { AppContext } from "../context.js";
import { cursorKey } from "../http/cursor.js";
import { principalOf } from "../http/principal.js";
import { AiCredentialService } from "./credentials.js";
import { AiPolicyService } from "./policies.js";

const s = initServer();

/** The AI routes: credentials, policies and the runs' record. */
export function aiRouter(ctx: AppContext) {
  const credentials = new AiCredentialService(ctx.db, { secretKey: ctx.config.secretKey, allowPrivate: ctx.config.webhooks.allowPrivate });
  const policies = new AiPolicyService(ctx.db);
  const key = cursorKey(ctx.config.secretKey);
  return {
    createCredential: s.route(contract.ai.createCredential, async ({ body, res }) => ({ status: 201, body: await credentials.create(principalOf(res), body) })),
    listCredentials: s.route(contract.ai.listCredentials, async ({ res }) => ({ status: 200, body: { data: await credentials.list(principalOf(res)) } })),
    deleteCredential: s.route(contract.ai.deleteCredential, async ({ params, res }) => {
      await credentials.delete(principalOf(res), params.id);
      return { status: 204, body: undefined };
    }),
    setPolicy: s.route(contract.ai.setPolicy, async ({ params, body, res }) => ({ status: 200, body: await policies.set(principalOf(res), params.connection, body) })),
    listPolicies: s.route(contract.ai.listPolicies, async ({ res }) => ({ status: 200, body: { data: await policies.list(principalOf(res)) } })),
    getPolicy: s.route(contract.ai.getPolicy, async ({ params, res }) => ({ status: 200, body: await policies.get(principalOf(res), params.connection) })),
    listRuns: s.route(contract.ai.listRuns, async ({ query, res }) => ({ status: 200, body: await ctx.services.aiRuns.list(principalOf(res).workspaceId, key, query) })),
  };
}
