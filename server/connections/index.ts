// The connections folder as the composition root builds it: the service, its routes, and the
// `connection.purge` job that removes a deleted connection's data.
import type { DataSource } from "typeorm";
import { purgeConnectionJob } from "../../jobs/purge-connection.js";
import type { Config } from "../config.js";
import type { EngineRegistry } from "../engines/engine.js";
import type { Logger } from "../logger.js";
import { connectionsRouter } from "./handlers.js";
import { ConnectionService } from "./service.js";

export function createConnections(deps: { db: DataSource; config: Config; engines: EngineRegistry; logger: Logger }) {
  const connections = new ConnectionService(deps.db, deps.config, deps.engines, deps.logger);
  return { connections, router: connectionsRouter(connections), jobs: [purgeConnectionJob(deps.db)] };
}
