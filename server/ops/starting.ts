// What the HTTP port answers while the process is still waiting for its dependencies at start:
// the same liveness and readiness probes as later (alive, not ready, naming what is awaited), and
// 503 with Retry-After for everything else, so that a load balancer or client that reaches the
// port early is told to come back rather than refused or left hanging.
import express, { type Express } from "express";
import type { Config } from "../config.js";
import { DATABASE_RETRY_AFTER_S } from "../db/availability.js";
import { ApiError, sendProblem } from "../http/errors.js";
import { requestContext } from "../http/request-context.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "./metrics.js";
import { opsRouter, type Readiness } from "./routes.js";

export function createStartingApp(config: Config, logger: Logger, metrics: Metrics, readiness: Readiness): Express {
  const app = express();
  app.disable("x-powered-by");
  app.use(requestContext(logger));
  app.use(opsRouter(config, metrics, readiness));
  app.use(async (_req, res) => {
    const down = await readiness.unavailable();
    sendProblem(
      res,
      new ApiError("unavailable", `The gateway is starting: waiting for ${down.join(", ") || "start-up"}.`, { retryAfter: DATABASE_RETRY_AFTER_S, unavailable: down }),
    );
  });
  return app;
}
