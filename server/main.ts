// Process entry: start the gateway, stop it gracefully on SIGTERM/SIGINT.
import { ConfigError, loadConfig } from "./config.js";
import { DataDirInUseError } from "./db/data-dir-lock.js";
import { DependencyUnavailableError } from "./db/availability.js";
import type { Gateway } from "./gateway.js";
import { createLogger } from "./logger.js";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  // Said before the gateway's modules load: under tsx (`npm start`) a first start compiles them all.
  logger.info({ port: config.port, host: config.host }, "starting: loading the gateway's modules");
  // Handlers first: the port answers (the probes, and the API while the engines open) before
  // startGateway returns, and a signal in that window (or while waiting for the database) must end
  // the process with 0, as a stop does, not kill it. Nothing is lost by not waiting: every
  // acceptance is committed, every job durable, and the loops (the dispatcher's hand-offs) start
  // only as startGateway returns.
  let gateway: Gateway | undefined;
  const shutdown = (signal: string) => {
    if (!gateway) {
      logger.info({ signal }, "stopped while starting");
      process.exit(0);
    }
    logger.info({ signal }, "shutting down: finishing requests and jobs in flight");
    gateway.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  const { startGateway } = await import("./gateway.js");
  try {
    gateway = await startGateway(config, { logger });
  } catch (err) {
    // A dependency that never came up within DATABASE_WAIT_S: one line, not a stack.
    if (err instanceof DependencyUnavailableError) {
      console.error(`svc-gateway: cannot start: ${err.message}`);
      process.exit(1);
    }
    // A setting that only the database's state shows to be missing (ADMIN_EMAIL on a first start).
    if (err instanceof ConfigError) {
      console.error(`svc-gateway: cannot start: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  logger.info({ url: gateway.url, base_url: config.baseUrl }, `svc-gateway listening on ${gateway.url}`);
  // The one address a new user opens (README, "The dashboard"): WEB_URL, which is BASE_URL by default.
  logger.info({ dashboard: `${config.webUrl}/` }, `dashboard: open ${config.webUrl}/ in a browser and sign in with your e-mail address`);
}

main().catch((err: unknown) => {
  // An operator's situation, not a defect: the message alone says what to do.
  console.error(err instanceof DataDirInUseError ? err.message : err);
  process.exit(1);
});
