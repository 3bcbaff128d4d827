// Who is calling. Tenancy always comes from here (the credential), never from a request body.
import type { Request, Response } from "express";
import type { Role, Scope } from "../../contract/common.js";
import type { Plan } from "../workspace/entities.js";
import { ApiError } from "./errors.js";

interface Base {
  workspaceId: string;
  userId: string;
  plan: Plan;
}

export interface ApiKeyPrincipal extends Base {
  kind: "api_key";
  keyId: string;
  name: string;
  prefix: string;
  environment: "live" | "test";
  /** Effective scopes: the key's own, capped by the issuer's current role. */
  scopes: Scope[];
}

export interface SessionPrincipal extends Base {
  kind: "session";
  sessionId: string;
  email: string;
  role: Role;
}

export interface OAuthPrincipal extends Base {
  kind: "oauth";
  tokenId: string;
  clientId: string;
  scopes: Scope[];
}

export type Principal = ApiKeyPrincipal | SessionPrincipal | OAuthPrincipal;

export function principalOf(res: Response): Principal {
  const p = res.locals.principal as Principal | undefined;
  if (!p) throw new ApiError("unauthorized");
  return p;
}

export function sessionOf(res: Response): SessionPrincipal {
  const p = res.locals.principal as Principal | undefined;
  if (p?.kind === "session") return p;
  if (res.locals.user) throw new ApiError("forbidden", "You are not a member of a workspace yet; accept an invitation first.");
  throw new ApiError("unauthorized", "A dashboard session is required.");
}

export function clientIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? "unknown";
}

/** A signed-in dashboard user, whether or not they belong to a workspace yet. */
export interface SignedInUser {
  sessionId: string;
  userId: string;
  email: string;
}

export function signedInUserOf(res: Response): SignedInUser {
  const u = res.locals.user as SignedInUser | undefined;
  if (!u) throw new ApiError("unauthorized", "Sign in first.");
  return u;
}
