// The transport callback (docs/engines.md, "The callback wire format"): the token in the path is checked first, before the body is
// even read, so an unknown provider or token is a 404 whatever was sent. For a known token, a
// payload we cannot read (malformed JSON, unknown event type, missing fields) is acknowledged
// with 202 and ignored: an engine retrying it would never succeed, and nothing of it is stored.
import type { ErrorRequestHandler, RequestHandler, Response } from "express";
import type { AppRouteImplementation } from "@ts-rest/express";
import type { contract } from "../../contract/index.js";
import { ApiError, sendProblem } from "../http/errors.js";
import { stringProblem } from "../http/input-check.js";
import type { ProviderCallbackService } from "./service.js";

export const PROVIDER_CALLBACK_PATH = "/v1/provider/:providerName/:token";

/** Mounted before the body parser. */
export function providerTokenCheck(callbacks: ProviderCallbackService): RequestHandler {
  return (req, res, next) => {
    const { providerName, token } = req.params as { providerName: string; token: string };
    // A name the database could not even hold (a NUL, a lone surrogate) names no connection.
    if (stringProblem(providerName) || stringProblem(token)) return unknownCallback(res);
    callbacks.knows(providerName, token).then((known) => {
      if (known) {
        res.locals.knownCallback = true;
        return next();
      }
      unknownCallback(res);
    }, next);
  };
}

function unknownCallback(res: Response): void {
  // The body stays unread: close the connection rather than parse it as the next request.
  res.setHeader("Connection", "close");
  sendProblem(res, ApiError.notFound("callback (unknown provider or token)"));
}

/** Mounted after the routes: a known callback's unreadable payload is ignored, not refused. */
export const ignoreUnreadableCallback: ErrorRequestHandler = (err, req, res, next) => {
  if (!(res.locals.knownCallback && err instanceof ApiError && err.code === "validation_failed")) return next(err);
  // Field paths only: the values may be message content.
  req.log?.debug({ refused: err.extra.errors?.map((e) => e.path) ?? err.message }, "provider callback ignored: payload not recognised");
  res.status(202).json({ accepted: false });
};

/** `ops.providerCallback`: 202 whether the report was applied or ignored (a duplicate, nothing to do). */
export function providerCallbackHandler(callbacks: ProviderCallbackService): AppRouteImplementation<typeof contract.ops.providerCallback> {
  return async ({ params, body }) => {
    const ack = await callbacks.handle(params.providerName, params.token, body);
    return { status: 202, body: ack };
  };
}
