// The events folder's API as the composition root builds it: the log's replay and its route. (The
// live stream and the brokers' sinks are mounted and started by the app and the gateway.)
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import { eventsRouter } from "./handlers.js";
import { EventReplay } from "./replay.js";

export function createEvents(deps: { db: DataSource; config: Pick<Config, "secretKey"> }) {
  const events = new EventReplay(deps.db, deps.config.secretKey);
  return { events, router: eventsRouter(events) };
}
