// Request ids and access logs. The id is taken from a well-formed incoming X-Request-Id (so a
// caller's tracing survives) or generated, echoed on every response and in every problem body.
import { randomBytes } from "node:crypto";
import type { RequestHandler } from "express";
import type { Logger } from "../logger.js";

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,64}$/;

export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers["x-request-id"];
    const id = typeof incoming === "string" && INCOMING_ID.test(incoming) ? incoming : `req_${randomBytes(12).toString("base64url")}`;
    res.locals.requestId = id;
    res.setHeader("X-Request-Id", id);
    const log = logger.child({ request_id: id });
    req.log = log;
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const route = (req as { tsRestRoute?: { path: string } }).tsRestRoute?.path;
      // The route template, never the concrete path: a provider callback's path carries its token.
      log.info({ method: req.method, route: route ?? "unmatched", status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }, "request");
    });
    next();
  };
}

declare module "express-serve-static-core" {
  interface Request {
    log?: Logger;
  }
}
