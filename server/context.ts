// Everything a request or a job may need, built once at start and passed down explicitly.
import type { DataSource } from "typeorm";
import { ApiKeyService } from "./api-keys/service.js";
import { SignInService } from "./auth/sign-in.js";
import type { Config } from "./config.js";
import type { Logger } from "./logger.js";
import type { Mailer } from "./mail/mailer.js";
import type { Metrics } from "./ops/metrics.js";
import { TeamService } from "./team/service.js";
import { WorkspaceService } from "./workspace/service.js";
import type { JobRunner } from "../jobs/runner.js";
import type { EngineRegistry } from "./engines/engine.js";

export interface AppContext {
  config: Config;
  db: DataSource;
  logger: Logger;
  mailer: Mailer;
  metrics: Metrics;
  jobs: JobRunner;
  /** Linked-device engines by name; `config.transport` names the default for new connections. */
  engines: EngineRegistry;
  services: Services;
}

export interface Services {
  signIn: SignInService;
  apiKeys: ApiKeyService;
  team: TeamService;
  workspaces: WorkspaceService;
}

export function createServices(deps: Omit<AppContext, "services">): Services {
  return {
    signIn: new SignInService(deps.db, deps.mailer, deps.logger, deps.config.secretKey),
    apiKeys: new ApiKeyService(deps.db),
    team: new TeamService(deps.db, deps.mailer, deps.config, deps.logger),
    workspaces: new WorkspaceService(deps.db),
  };
}
