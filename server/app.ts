// The Express app: middleware order, the contract's routes, the operational routes.
import express, { type Express, type Request, type Response, type NextFunction } from "express";
import { createExpressEndpoints, initServer, RequestValidationError } from "@ts-rest/express";
import { contract } from "../contract/index.js";
import type { DataSource } from "typeorm";
import type { ApiKeyCache } from "./auth/key-cache.js";
import type { Config } from "./config.js";
import type { EngineRegistry } from "./engines/engine.js";
import { sandboxControl, SANDBOX_CONTROL_PATH } from "./engines/sandbox/index.js";
import { allowedMethods } from "./http/allowed-methods.js";
import { authenticate } from "./http/authenticate.js";
import { ApiError, errorMiddleware, sendProblem, zodFieldErrors } from "./http/errors.js";
import { JSON_TYPES, jsonBody, MAX_BODY_BYTES, refuseOversizedBodies } from "./http/json-body.js";
import { checkInput, refuseRepeatedHeaders } from "./http/input-check.js";
import { requestContext } from "./http/request-context.js";
import { EVENT_STREAM_PATH, eventStream, type EventFeed } from "./events/stream.js";
import type { Logger } from "./logger.js";
import { mcpEdge, resourceMetadataUrl } from "./mcp/endpoint.js";
import { oauthMetadataRouter } from "./oauth/metadata.js";
import type { Metrics } from "./ops/metrics.js";
import { opsRouter, type Readiness } from "./ops/routes.js";
import { ignoreUnreadableCallback, PROVIDER_CALLBACK_PATH, providerCallbackHandler, providerTokenCheck } from "./provider/handlers.js";
import type { ProviderCallbackService } from "./provider/service.js";
import { webRouter } from "./web/index.js";

const s = initServer();

/** The contract's routers but the operational ones, built by the composition root (server/compose.ts). */
export type ApiRoutes = Omit<Parameters<typeof createExpressEndpoints<typeof contract>>[1], "ops">;

/** What the app itself stands on besides the routes: the edge's middleware and the operational routes. */
export interface AppDeps {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  engines: EngineRegistry;
  /** Authentication and the event stream read keys and sessions. */
  db: DataSource;
  keyCache: ApiKeyCache;
  eventFeed: EventFeed;
  providerCallbacks: ProviderCallbackService;
}

export function createApp(deps: AppDeps, api: ApiRoutes, readiness: Readiness): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  // Client IPs feed the sign-in rate limits: only trust X-Forwarded-For from configured proxies.
  if (deps.config.trustProxy) app.set("trust proxy", /^\d+$/.test(deps.config.trustProxy) ? Number(deps.config.trustProxy) : deps.config.trustProxy);

  app.use(requestContext(deps.logger));
  app.use(deps.metrics.middleware());
  // Every answer, the API's and the dashboard's: a browser never guesses a type we did not send.
  app.use((_req, res, next) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    next();
  });
  app.use(refuseRepeatedHeaders);
  // Spec 4.10: a callback's token is checked before anything about its body.
  app.post(PROVIDER_CALLBACK_PATH, providerTokenCheck(deps.providerCallbacks));
  app.use(refuseOversizedBodies);
  app.use(jsonBody);
  // Forms only where OAuth requires one (RFC 6749 3.2): nowhere else can a cross-site form post.
  app.post(contract.oauth.token.path, express.urlencoded({ extended: false, limit: MAX_BODY_BYTES }));
  app.use(opsRouter(deps.config, deps.metrics, readiness));
  // The simulated network's control API: only when the sandbox is enabled (never in production).
  const sandbox = sandboxControl(deps.config, deps.engines);
  if (sandbox) app.use(SANDBOX_CONTROL_PATH, sandbox);
  app.use(mcpEdge(deps.config));
  app.use(oauthMetadataRouter(deps.config));
  // The live event stream (the dashboard's monitor, or a key's consumer): beside the contract (docs/decisions.md).
  app.get(EVENT_STREAM_PATH, eventStream(deps.db, deps.eventFeed, { keyCache: deps.keyCache }));

  // Built on the first request for it, not at start: the generator (@ts-rest/open-api,
  // zod-to-json-schema) and the document are a sizeable part of an idle gateway's memory.
  let openapi: Promise<Record<string, unknown>> | undefined;
  const openapiDocument = () => {
    // The contract types the document as a JSON object; OpenAPIObject is one, without an index signature.
    openapi ??= import("./openapi/document.js").then((m) => ({ ...m.buildOpenApiDocument({ serverUrl: deps.config.baseUrl }) }));
    openapi.catch(() => (openapi = undefined));
    return openapi;
  };
  const router = s.router(contract, {
    ...api,
    ops: {
      openapi: async () => ({ status: 200, body: await openapiDocument() }),
      providerCallback: providerCallbackHandler(deps.providerCallbacks),
    },
  });

  createExpressEndpoints(contract, router, app, {
    logInitialization: false,
    jsonQuery: false,
    responseValidation: false,
    // ts-rest types these per route; ours are route-agnostic Express middleware.
    globalMiddleware: [
      authenticate({
        db: deps.db,
        keyCache: deps.keyCache,
        trustedOrigins: [...new Set([new URL(deps.config.webUrl).origin, new URL(deps.config.baseUrl).origin])],
        rateLimit: { perMinute: deps.config.apiRateLimitPerMinute, burst: deps.config.apiRateLimitBurst },
        mcpResourceMetadataUrl: resourceMetadataUrl(deps.config.webUrl),
      }) as never,
      checkInput as never,
    ],
    requestValidationErrorHandler: validationProblem as never,
  });

  app.use(ignoreUnreadableCallback);
  // The dashboard last: only what no API route took reaches it.
  const web = webRouter(deps.config);
  if (web) app.use(web);
  const allowed = allowedMethods(contract, { [EVENT_STREAM_PATH]: ["GET"] });
  app.use((req, res) => {
    const methods = allowed(req.path);
    if (methods.length === 0) return sendProblem(res, new ApiError("not_found", "No such route. The API is described at /v1/openapi.json."));
    res.setHeader("Allow", methods.join(", "));
    sendProblem(res, new ApiError("method_not_allowed", `${req.method} is not allowed on this path; it takes ${methods.join(", ")}.`));
  });
  app.use(errorMiddleware);
  return app;
}

function validationProblem(err: RequestValidationError, req: Request, _res: Response, next: NextFunction): void {
  // A body that is not JSON was not read as one (only the token endpoint takes a form): say that,
  // rather than list every field of the empty body it left.
  const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
  if (err.body && hasBody && !req.is(JSON_TYPES) && !(req.is("application/x-www-form-urlencoded") && req.path === contract.oauth.token.path)) {
    const type = req.headers["content-type"];
    next(ApiError.validation([{ path: "body", message: `must be JSON sent with Content-Type: application/json (this request's Content-Type is ${type ? `"${type}"` : "missing"})` }]));
    return;
  }
  const errors = [
    ...(err.pathParams ? zodFieldErrors(err.pathParams, "path") : []),
    ...(err.headers ? zodFieldErrors(err.headers, "headers") : []),
    ...(err.query ? zodFieldErrors(err.query, "query") : []),
    ...(err.body ? zodFieldErrors(err.body, "body") : []),
  ];
  next(ApiError.validation(errors));
}
