// The dashboard (web/), served by the gateway at {web_url}/: fingerprinted assets with a year's
// cache, index.html for the page's own routes, a strict Content-Security-Policy on both.
import express, { Router, type Request } from "express";
import { parse as parseCookies } from "cookie";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { CONSENT_PAGE_PATH } from "../../contract/oauth.js";
import { SESSION_COOKIE } from "../auth/session-cookie.js";
import type { Config } from "../config.js";
import { webDistDir } from "./build.js";

/** index.html's tag telling the page whether it came with the session cookie (web/src/session.ts). */
const SESSION_HINT = /<meta name="svc-session" content="[a-z]*"/;

/**
 * Paths that are never the dashboard's: the API, the operational and discovery routes, the
 * sandbox, and /oauth but for the consent page the authorization endpoint sends members to.
 */
const NOT_THE_PAGE = /^\/(v1|\.well-known|sandbox|oauth(?!\/consent$)|mcp|healthz|readyz|metrics)(\/|$)/;

export function contentSecurityPolicy(config: Pick<Config, "baseUrl" | "webUrl">): string {
  const api = new URL(config.baseUrl).origin;
  const connect = api === new URL(config.webUrl).origin ? "'self'" : `'self' ${api}`;
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect}`,
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The dashboard's routes; null when there is no build to serve (logged by the caller). */
export function webRouter(config: Pick<Config, "baseUrl" | "webUrl">, dist = webDistDir()): Router | null {
  const index = join(dist, "index.html");
  if (!existsSync(index)) return null;
  const csp = contentSecurityPolicy(config);
  const router = Router();
  router.use((_req, res, next) => {
    res.setHeader("Content-Security-Policy", csp);
    res.setHeader("Referrer-Policy", "same-origin");
    next();
  });
  // Names carry a content hash (web/vite.config.ts), so a name never changes meaning.
  router.use(
    "/assets",
    express.static(join(dist, "assets"), { immutable: true, maxAge: "365d", index: false }),
  );
  router.get(/.*/, async (req, res, next) => {
    if (!wantsPage(req)) return next();
    res.setHeader("Cache-Control", "no-cache");
    if (req.path === CONSENT_PAGE_PATH) {
      // Its address carries a pending authorization: never stored, never sent on, never framed
      // (frame-ancestors 'none' above, and the older header for older browsers).
      res.setHeader("Cache-Control", "no-store");
      res.setHeader("Referrer-Policy", "no-referrer");
      res.setHeader("X-Frame-Options", "DENY");
    }
    // Whether the cookie came along, not whether it is valid: the page then asks GET
    // /v1/auth/session, and without it asks nothing that could only answer 401.
    const hint = parseCookies(req.headers.cookie ?? "")[SESSION_COOKIE] ? "cookie" : "none";
    res.setHeader("Vary", "Cookie");
    res.type("html").send((await readFile(index, "utf8")).replace(SESSION_HINT, `<meta name="svc-session" content="${hint}"`));
  });
  return router;
}

/** A browser navigating to one of the page's routes: a GET for HTML outside the API's paths. */
function wantsPage(req: Request): boolean {
  if (NOT_THE_PAGE.test(req.path)) return false;
  return req.accepts(["html", "json"]) === "html" && (req.headers.accept ?? "").includes("text/html");
}
