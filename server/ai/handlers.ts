import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import type { AiCredentialService } from "./credentials.js";
import type { AiPolicyService } from "./policies.js";
import type { AiRunner } from "./runs/runner.js";

const s = initServer();

/** The AI routes: credentials, policies and the runs' record. */
export function aiRouter({ credentials, policies, runs }: { credentials: AiCredentialService; policies: AiPolicyService; runs: AiRunner }) {
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
    listRuns: s.route(contract.ai.listRuns, async ({ query, res }) => ({ status: 200, body: await runs.list(principalOf(res).workspaceId, query) })),
  };
}
