// Prometheus metrics. Labels are low-cardinality by construction: the route template, never a
// path with ids, and nothing naming a workspace, connection, number or session.
import type { RequestHandler } from "express";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: "svc_http_requests_total",
    help: "HTTP requests by route template, method and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: "svc_http_request_duration_seconds",
    help: "HTTP request latency by route template",
    labelNames: ["method", "route"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "svc_" });
  }

  middleware(): RequestHandler {
    return (req, res, next) => {
      const end = this.httpDuration.startTimer();
      res.on("finish", () => {
        const route = (req as { tsRestRoute?: { path: string } }).tsRestRoute?.path ?? (req.route?.path as string | undefined) ?? "unmatched";
        end({ method: req.method, route });
        this.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      });
      next();
    };
  }
}
