// The sign-in folder as the composition root builds it: the service and its routes.
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Mailer } from "../mail/mailer.js";
import { authRouter } from "./handlers.js";
import { SignInService } from "./sign-in.js";

export function createAuth(deps: { db: DataSource; mailer: Mailer; logger: Logger; config: Pick<Config, "secretKey" | "webUrl" | "baseUrl"> }) {
  const signIn = new SignInService(deps.db, deps.mailer, deps.logger, deps.config.secretKey);
  return { signIn, router: authRouter(signIn, deps.config) };
}
