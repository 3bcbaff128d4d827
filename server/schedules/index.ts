// The schedules folder as the composition root builds it: the service, the firing with the loop
// that runs it in every process (server/schedules/firing.ts), and the routes.
import type { DataSource } from "typeorm";
import type { DatabaseListener } from "../db/listener.js";
import type { Foreground } from "../foreground.js";
import type { Logger } from "../logger.js";
import type { Loop } from "../loop.js";
import type { MessageSender } from "../messages/send.js";
import { ScheduleFiring, ScheduleFiringLoop } from "./firing.js";
import { schedulesRouter } from "./handlers.js";
import { ScheduleService } from "./service.js";

export function createSchedules(deps: { db: DataSource; logger: Logger; sender: MessageSender; listener: DatabaseListener; foreground: Foreground }) {
  const schedules = new ScheduleService(deps.db, deps.sender);
  const scheduleFiring = new ScheduleFiring(deps.db, deps.logger);
  const loops: Loop[] = [new ScheduleFiringLoop(deps.db, scheduleFiring, deps.listener, deps.logger, deps.foreground)];
  return { schedules, scheduleFiring, router: schedulesRouter(schedules), loops };
}
