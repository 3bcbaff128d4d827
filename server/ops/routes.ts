// Operational endpoints outside the contract: liveness, readiness, metrics, the API catalog.
import { timingSafeEqual } from "node:crypto";
import { Router, type Request } from "express";
import type { Config } from "../config.js";
import { ApiError, sendProblem } from "../http/errors.js";
import type { Metrics } from "./metrics.js";

export interface Readiness {
  /** Name of each dependency that is not available; empty when ready. */
  unavailable(): Promise<string[]>;
  /** What works less than it should without making the API unable to serve (mail); said in a 200. */
  warnings?(): string[];
}

export function opsRouter(config: Config, metrics: Metrics, readiness: Readiness): Router {
  const router = Router();

  // Liveness for restart policies: answers while the event loop runs, touches nothing else.
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });

  router.get("/readyz", async (_req, res) => {
    const down = await readiness.unavailable();
    if (down.length === 0) {
      const warnings = readiness.warnings?.() ?? [];
      res.json(warnings.length ? { status: "ready", warnings } : { status: "ready" });
      return;
    }
    sendProblem(res, new ApiError("unavailable", `Not ready: ${down.join(", ")} unavailable.`, { unavailable: down }));
  });

  if (config.metricsToken) {
    const expected = Buffer.from(`Bearer ${config.metricsToken}`);
    router.get("/metrics", async (req, res) => {
      if (!tokenMatches(req, expected)) {
        res.setHeader("WWW-Authenticate", 'Bearer realm="metrics"');
        sendProblem(res, new ApiError("unauthorized", "Send the METRICS_TOKEN as a Bearer token."));
        return;
      }
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
  }

  // RFC 9727: the API catalog, a linkset pointing at the machine-readable description.
  const catalog = {
    linkset: [
      {
        anchor: `${config.baseUrl}/v1`,
        "service-desc": [{ href: `${config.baseUrl}/v1/openapi.json`, type: "application/openapi+json;version=3.1" }],
        status: [{ href: `${config.baseUrl}/readyz`, type: "application/json" }],
      },
      {
        // The hosted tool endpoint: its protected-resource metadata leads to the authorization server.
        anchor: `${config.webUrl}/v1/mcp`,
        "service-meta": [{ href: `${config.webUrl}/.well-known/oauth-protected-resource/v1/mcp`, type: "application/json" }],
      },
    ],
  };
  const catalogUrl = `${config.webUrl}/.well-known/api-catalog`;
  router.all("/.well-known/api-catalog", (req, res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD") return next();
    res.setHeader("Link", `<${catalogUrl}>; rel="api-catalog"`);
    res.type('application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"');
    if (req.method === "HEAD") return void res.end();
    res.send(JSON.stringify(catalog));
  });

  return router;
}

function tokenMatches(req: Request, expected: Buffer): boolean {
  const given = Buffer.from(req.headers.authorization ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
