// Request ids and access logs. The id is taken from a well-formed incoming X-Request-Id (so a
// caller's tracing survives) or generated, echoed on every response and in every problem body.
//
// Every request passes here, so it does no more than it must: `req.log` (a logger bound to the
// request id) is made the first time something logs through it, not per request; the access log
// line carries the id as a field, and its listener is only added when `info` is logged at all.
import express, { type RequestHandler } from "express";
import { randomBase64url } from "../ids.js";
import type { Logger } from "../logger.js";

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,64}$/;
const LOG = Symbol("request log");
const LOGGER = Symbol("process logger");
const ID = Symbol("request id");

interface Bound {
  [LOGGER]?: Logger;
  [ID]?: string;
  [LOG]?: Logger;
}

// Once, on the prototype every request object of every app inherits from (Express's way to extend
// requests): a getter per request would give each request object a shape of its own.
Object.defineProperty(express.request, "log", {
  configurable: true,
  enumerable: true,
  get(this: Bound) {
    const logger = this[LOGGER];
    return logger && (this[LOG] ??= logger.child({ request_id: this[ID] }));
  },
});

export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers["x-request-id"];
    const id = typeof incoming === "string" && INCOMING_ID.test(incoming) ? incoming : `req_${randomBase64url(12)}`;
    res.locals.requestId = id;
    res.setHeader("X-Request-Id", id);
    (req as Bound)[LOGGER] = logger;
    (req as Bound)[ID] = id;
    if (logger.isLevelEnabled("info")) {
      const started = process.hrtime.bigint();
      res.on("finish", () => {
        const route = (req as { tsRestRoute?: { path: string } }).tsRestRoute?.path;
        // The route template, never the concrete path: a provider callback's path carries its token.
        logger.info(
          { request_id: id, method: req.method, route: route ?? "unmatched", status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 },
          "request",
        );
      });
    }
    next();
  };
}

declare module "express-serve-static-core" {
  interface Request {
    log?: Logger;
  }
}
