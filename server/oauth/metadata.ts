// Discovery (docs/mcp.md): RFC 8414 authorization-server metadata and RFC 9728 protected-resource
// metadata at {web_url}/.well-known/…, each in the path-inserted and the root form. Public
// documents any browser-based client may read (CORS *), as are registration and token.
import { Router, type RequestHandler } from "express";
import type { Config } from "../config.js";
import { MCP_PATH, resourceMetadataUrl } from "../mcp/endpoint.js";
import { MCP_SCOPES } from "./tokens.js";

export const TOKEN_PATH = "/v1/oauth/token";
export const REGISTER_PATH = "/v1/oauth/register";
export const AUTHORIZE_PATH = "/v1/oauth/authorize";

/** The issuer is the public web address (RFC 8414 2: https, no query or fragment). */
export function issuerOf(config: Pick<Config, "webUrl">): string {
  return config.webUrl;
}

export function toolResourceOf(config: Pick<Config, "webUrl">): string {
  return `${config.webUrl}${MCP_PATH}`;
}

export function authorizationServerMetadata(config: Pick<Config, "webUrl" | "baseUrl">) {
  return {
    issuer: issuerOf(config),
    authorization_endpoint: `${config.baseUrl}${AUTHORIZE_PATH}`,
    token_endpoint: `${config.baseUrl}${TOKEN_PATH}`,
    registration_endpoint: `${config.baseUrl}${REGISTER_PATH}`,
    scopes_supported: [...MCP_SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    token_endpoint_auth_methods_supported: ["none"],
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}

export function protectedResourceMetadata(config: Pick<Config, "webUrl">) {
  return {
    resource: toolResourceOf(config),
    authorization_servers: [issuerOf(config)],
    scopes_supported: [...MCP_SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: "svc-gateway tool endpoint",
  };
}

export const publicCors: RequestHandler = (req, res, next) => {
  res.setHeader("Access-Control-Allow-Origin", "*");
  res.setHeader("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.setHeader("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version");
  if (req.method === "OPTIONS") return void res.status(204).end();
  next();
};

export function oauthMetadataRouter(config: Config): Router {
  const router = Router();
  const as = authorizationServerMetadata(config);
  const prm = protectedResourceMetadata(config);
  const webPath = new URL(config.webUrl).pathname.replace(/\/$/, "");
  const prmPath = new URL(resourceMetadataUrl(config.webUrl)).pathname;
  const send = (doc: unknown): RequestHandler => (_req, res) => {
    res.setHeader("Cache-Control", "public, max-age=3600");
    res.json(doc);
  };
  const asPaths = [...new Set([`/.well-known/oauth-authorization-server${webPath}`, "/.well-known/oauth-authorization-server"])];
  const prmPaths = [...new Set([prmPath, "/.well-known/oauth-protected-resource"])];
  for (const path of asPaths) router.all(path, publicCors).get(path, send(as));
  for (const path of prmPaths) router.all(path, publicCors).get(path, send(prm));
  // Preflights of browser-based clients for the two endpoints they POST to.
  router.options([TOKEN_PATH, REGISTER_PATH], publicCors);
  return router;
}
