import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { Config } from "../config.js";
import { clientIp, signedInUserOf } from "../http/principal.js";
import type { SignInService } from "./sign-in.js";
import { clearSessionCookie, secureCookies, setSessionCookie } from "./session-cookie.js";

const s = initServer();

export function authRouter(signIn: SignInService, config: Pick<Config, "webUrl" | "baseUrl">) {
  const secureCookie = secureCookies(config);

  return s.router(contract.auth, {
    requestCode: async ({ body, req }) => {
      await signIn.requestCode(body.email, clientIp(req));
      return { status: 202, body: { ok: true } };
    },
    verify: async ({ body, req, res }) => {
      const session = await signIn.verify(body.email, body.code, clientIp(req));
      setSessionCookie(res, session.token, secureCookie);
      return { status: 200, body: (await signIn.sessionView(session.userId, body.email.toLowerCase(), session.workspaceId)) };
    },
    session: async ({ res }) => {
      const user = signedInUserOf(res);
      const principal = res.locals.principal as { workspaceId: string } | undefined;
      return { status: 200, body: (await signIn.sessionView(user.userId, user.email, principal?.workspaceId ?? null)) };
    },
    logout: async ({ res }) => {
      await signIn.logout(signedInUserOf(res).sessionId);
      clearSessionCookie(res, secureCookie);
      return { status: 204, body: undefined };
    },
  });
}
