// Prometheus metrics. Labels are low-cardinality by construction: the route template, never a
// path with ids, and nothing naming a workspace, connection, number or session.
import type { RequestHandler } from "express";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

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

  /** Engine activity, by engine name only (never a connection, number or session). */
  readonly engineSends = new Counter({
    name: "svc_engine_sends_total",
    help: "Messages handed to the network by engine and outcome (written, failed, not_on_network: not written, the number is not on the network)",
    labelNames: ["engine", "outcome"] as const,
    registers: [this.registry],
  });
  readonly engineReceipts = new Counter({
    name: "svc_engine_receipts_total",
    help: "Acknowledgements and receipts received from the network by engine and status",
    labelNames: ["engine", "status"] as const,
    registers: [this.registry],
  });
  /** Why sockets could not connect (client_version_refused, replaced_elsewhere, passkey_required, creds_save_failed…). */
  readonly engineProblems = new Counter({
    name: "svc_engine_connection_problems_total",
    help: "Times an engine's socket could not be (or stay) connected, by engine and reason",
    labelNames: ["engine", "reason"] as const,
    registers: [this.registry],
  });
  readonly engineReconnects = new Counter({
    name: "svc_engine_reconnects_total",
    help: "Socket reconnects scheduled by engine",
    labelNames: ["engine"] as const,
    registers: [this.registry],
  });

  /** AI vendor answers reporting more tokens than their request allowed (counted at the limit), by provider. */
  readonly aiUsageOverLimit = new Counter({
    name: "svc_ai_vendor_usage_over_limit_total",
    help: "AI vendor answers that reported more tokens than the request allowed, by provider (counted at the limit)",
    labelNames: ["provider"] as const,
    registers: [this.registry],
  });
  /** Outgoing mail (sign-in codes, invitations) by kind: attempts that failed, and mails given up on. */
  readonly mailFailures = new Counter({
    name: "svc_mail_failures_total",
    help: "Failed mail attempts by kind (sign_in, invitation) and outcome (retrying, given_up)",
    labelNames: ["kind", "outcome"] as const,
    registers: [this.registry],
  });
  readonly mailSent = new Counter({
    name: "svc_mail_sent_total",
    help: "Mails handed to the mail server (or the development outbox) by kind",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });

  private connectionCounts: (() => Promise<{ engine: string; state: string; n: number }[]>) | null = null;
  readonly connections: Gauge<"engine" | "state"> = new Gauge({
    name: "svc_connections",
    help: "Live connections by engine and state",
    labelNames: ["engine", "state"] as const,
    registers: [this.registry],
    collect: async () => {
      if (!this.connectionCounts) return;
      const counts = await this.connectionCounts();
      this.connections.reset();
      for (const c of counts) this.connections.set({ engine: c.engine, state: c.state }, c.n);
    },
  });

  /** Where the connections gauge reads its counts (at scrape time). */
  countConnectionsWith(read: () => Promise<{ engine: string; state: string; n: number }[]>): void {
    this.connectionCounts = read;
  }

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
