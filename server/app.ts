// The Express app: middleware order, the contract's routes, the operational routes.
import express, { type Express, type Request, type Response, type NextFunction } from "express";
import { createExpressEndpoints, initServer, RequestValidationError } from "@ts-rest/express";
import { contract } from "../contract/index.js";
import { aiRouter } from "./ai/handlers.js";
import { authRouter } from "./auth/handlers.js";
import { connectionsRouter } from "./connections/handlers.js";
import { groupsRouter } from "./groups/handlers.js";
import { sandboxControl, SANDBOX_CONTROL_PATH } from "./engines/sandbox/index.js";
import type { AppContext } from "./context.js";
import { allowedMethods } from "./http/allowed-methods.js";
import { authenticate } from "./http/authenticate.js";
import { ApiError, errorMiddleware, sendProblem, zodFieldErrors } from "./http/errors.js";
import { JSON_TYPES, jsonBody, MAX_BODY_BYTES, refuseOversizedBodies } from "./http/json-body.js";
import { checkInput, refuseRepeatedHeaders } from "./http/input-check.js";
import { requestContext } from "./http/request-context.js";
import { eventsRouter } from "./events/handlers.js";
import { EVENT_STREAM_PATH, eventStream } from "./events/stream.js";
import { mcpEdge, resourceMetadataUrl } from "./mcp/endpoint.js";
import { mcpRouter } from "./mcp/handlers.js";
import { messagesRouter } from "./messages/handlers.js";
import { conversationsRouter } from "./messages/conversation-handlers.js";
import { RequestSigner } from "./oauth/authorize-request.js";
import { oauthRouter } from "./oauth/handlers.js";
import { oauthMetadataRouter } from "./oauth/metadata.js";
import { opsRouter, type Readiness } from "./ops/routes.js";
import { ignoreUnreadableCallback, PROVIDER_CALLBACK_PATH, providerCallbackHandler, providerTokenCheck } from "./provider/handlers.js";
import { schedulesRouter } from "./schedules/handlers.js";
import { teamRouter } from "./team/handlers.js";
import { workspaceRouter } from "./workspace/handlers.js";
import { webhooksRouter } from "./webhooks/handlers.js";
import { webRouter } from "./web/index.js";

const s = initServer();

export function createApp(ctx: AppContext, readiness: Readiness): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  // Client IPs feed the sign-in rate limits: only trust X-Forwarded-For from configured proxies.
  if (ctx.config.trustProxy) app.set("trust proxy", /^\d+$/.test(ctx.config.trustProxy) ? Number(ctx.config.trustProxy) : ctx.config.trustProxy);

  app.use(requestContext(ctx.logger));
  app.use(ctx.metrics.middleware());
  // Every answer, the API's and the dashboard's: a browser never guesses a type we did not send.
  app.use((_req, res, next) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    next();
  });
  app.use(refuseRepeatedHeaders);
  // Spec 4.10: a callback's token is checked before anything about its body.
  app.post(PROVIDER_CALLBACK_PATH, providerTokenCheck(ctx));
  app.use(refuseOversizedBodies);
  app.use(jsonBody);
  // Forms only where OAuth requires one (RFC 6749 3.2): nowhere else can a cross-site form post.
  app.post(contract.oauth.token.path, express.urlencoded({ extended: false, limit: MAX_BODY_BYTES }));
  app.use(opsRouter(ctx.config, ctx.metrics, readiness));
  // The simulated network's control API: only when the sandbox is enabled (never in production).
  const sandbox = sandboxControl(ctx.config, ctx.engines);
  if (sandbox) app.use(SANDBOX_CONTROL_PATH, sandbox);
  app.use(mcpEdge(ctx));
  const oauthRequests = new RequestSigner(ctx.config.secretKey);
  app.use(oauthMetadataRouter(ctx.config));
  // The live event stream (the dashboard's monitor, or a key's consumer): beside the contract (docs/decisions.md).
  app.get(EVENT_STREAM_PATH, eventStream(ctx.db, ctx.eventFeed, { keyCache: ctx.keyCache }));

  // Built on the first request for it, not at start: the generator (@ts-rest/open-api,
  // zod-to-json-schema) and the document are a sizeable part of an idle gateway's memory.
  let openapi: Promise<Record<string, unknown>> | undefined;
  const openapiDocument = () => {
    // The contract types the document as a JSON object; OpenAPIObject is one, without an index signature.
    openapi ??= import("./openapi/document.js").then((m) => ({ ...m.buildOpenApiDocument({ serverUrl: ctx.config.baseUrl }) }));
    openapi.catch(() => (openapi = undefined));
    return openapi;
  };
  const router = s.router(contract, {
    messages: messagesRouter(ctx),
    conversations: conversationsRouter(ctx),
    connections: connectionsRouter(ctx),
    groups: groupsRouter(ctx),
    schedules: schedulesRouter(ctx),
    webhooks: webhooksRouter(ctx),
    events: eventsRouter(ctx),
    ai: aiRouter(ctx),
    workspace: workspaceRouter(ctx),
    team: teamRouter(ctx),
    auth: authRouter(ctx),
    oauth: oauthRouter(ctx, oauthRequests),
    mcp: mcpRouter(ctx),
    ops: {
      openapi: async () => ({ status: 200, body: await openapiDocument() }),
      providerCallback: providerCallbackHandler(ctx),
    },
  });

  createExpressEndpoints(contract, router, app, {
    logInitialization: false,
    jsonQuery: false,
    responseValidation: false,
    // ts-rest types these per route; ours are route-agnostic Express middleware.
    globalMiddleware: [
      authenticate({
        db: ctx.db,
        keyCache: ctx.keyCache,
        trustedOrigins: [...new Set([new URL(ctx.config.webUrl).origin, new URL(ctx.config.baseUrl).origin])],
        rateLimit: { perMinute: ctx.config.apiRateLimitPerMinute, burst: ctx.config.apiRateLimitBurst },
        mcpResourceMetadataUrl: resourceMetadataUrl(ctx.config.webUrl),
      }) as never,
      checkInput as never,
    ],
    requestValidationErrorHandler: validationProblem as never,
  });

  app.use(ignoreUnreadableCallback);
  // The dashboard last: only what no API route took reaches it.
  const web = webRouter(ctx.config);
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
