// Keeps the authorization server's tables bounded: registrations nobody approved within a day,
// approvals never exchanged, expired codes and tokens (server/oauth/clients.ts says which).
import type { AppContext } from "../server/context.js";
import { pruneOAuth } from "../server/oauth/clients.js";
import { OAUTH_PRUNE_JOB } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function oauthPruneJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: OAUTH_PRUNE_JOB,
    concurrency: 1,
    lockLifetimeMs: 10 * 60_000,
    async run() {
      await pruneOAuth(ctx.db);
    },
  };
}
