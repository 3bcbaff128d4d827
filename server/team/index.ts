// The team folder as the composition root builds it: the service and its routes.
import type { DataSource } from "typeorm";
import type { ApiKeyCache } from "../auth/key-cache.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Mailer } from "../mail/mailer.js";
import { teamRouter } from "./handlers.js";
import { TeamService } from "./service.js";

export function createTeam(deps: { db: DataSource; mailer: Mailer; config: Config; logger: Logger; keyCache: ApiKeyCache }) {
  const team = new TeamService(deps.db, deps.mailer, deps.config, deps.logger, deps.keyCache);
  return { team, router: teamRouter(team) };
}
