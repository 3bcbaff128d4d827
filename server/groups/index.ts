// The groups folder as the composition root builds it: the service and its routes.
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import type { ConnectionService } from "../connections/service.js";
import type { EngineRegistry } from "../engines/engine.js";
import { groupsRouter } from "./handlers.js";
import { GroupService } from "./service.js";

export function createGroups(deps: { db: DataSource; config: Config; engines: EngineRegistry; connections: ConnectionService }) {
  const groups = new GroupService(deps.db, deps.config, deps.engines, deps.connections);
  return { groups, router: groupsRouter(groups) };
}
