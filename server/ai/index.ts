// The AI folder as the composition root builds it: credentials, policies, the runner (worked by
// `ai.run` jobs) and the routes.
import type { DataSource } from "typeorm";
import { aiRunJob } from "../../jobs/ai-run.js";
import type { AiProvider } from "../../contract/index.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { MessageSender } from "../messages/send.js";
import { AiCredentialService } from "./credentials.js";
import { aiRouter } from "./handlers.js";
import { AiPolicyService } from "./policies.js";
import { AiRunner } from "./runs/runner.js";

export function createAi(deps: {
  db: DataSource;
  logger: Logger;
  config: Pick<Config, "secretKey" | "webhooks" | "ai">;
  sender: MessageSender;
  /** Counts a vendor answer that reported more tokens than the request allowed. */
  onUsageOverLimit: (provider: AiProvider) => void;
}) {
  const { db, config } = deps;
  const outbound = { secretKey: config.secretKey, allowPrivate: config.webhooks.allowPrivate };
  const aiCredentials = new AiCredentialService(db, outbound);
  const aiPolicies = new AiPolicyService(db);
  const aiRuns = new AiRunner(db, deps.sender, deps.logger, { ...outbound, vendorTimeoutMs: config.ai.vendorTimeoutMs, onUsageOverLimit: deps.onUsageOverLimit });
  return { aiCredentials, aiPolicies, aiRuns, router: aiRouter({ credentials: aiCredentials, policies: aiPolicies, runs: aiRuns }), jobs: [aiRunJob(aiRuns)] };
}
