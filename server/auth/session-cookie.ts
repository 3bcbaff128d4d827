import type { Response } from "express";
import type { Config } from "../config.js";

export const SESSION_COOKIE = "svc_session";
/** Sessions last 7 days from sign-in (docs/decisions.md). */
export const SESSION_TTL_MS = 7 * 24 * 3600_000;

export function setSessionCookie(res: Response, token: string, secure: boolean): void {
  res.cookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: "lax", secure, path: "/", maxAge: SESSION_TTL_MS });
}

export function clearSessionCookie(res: Response, secure: boolean): void {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: "lax", secure, path: "/" });
}

/** Cookies are Secure as soon as the gateway is reached over https. */
export function secureCookies(config: Pick<Config, "webUrl" | "baseUrl">): boolean {
  return config.webUrl.startsWith("https:") || config.baseUrl.startsWith("https:");
}
