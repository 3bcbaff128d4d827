// The OAuth folder as the composition root builds it: the service and its routes.
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import { oauthRouter } from "./handlers.js";
import { OAuthService } from "./service.js";

export function createOAuth(deps: { db: DataSource; config: Pick<Config, "webUrl" | "secretKey" | "webhooks"> }) {
  const oauth = new OAuthService(deps.db, { allowPrivate: deps.config.webhooks.allowPrivate });
  return { oauth, router: oauthRouter(oauth, deps.config) };
}
