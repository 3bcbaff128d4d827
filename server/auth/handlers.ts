import { initServer } from "@ts-rest/express";
import { contract, type Role, type Session } from "../../contract/index.js";
import type { AppContext } from "../context.js";
import { clientIp, signedInUserOf } from "../http/principal.js";
import { Workspace } from "../workspace/entities.js";
import { clearSessionCookie, secureCookies, setSessionCookie } from "./session-cookie.js";

const s = initServer();

export function authRouter(ctx: AppContext) {
  const secureCookie = secureCookies(ctx.config);

  async function sessionView(userId: string, email: string, workspaceId: string | null): Promise<Session> {
    if (!workspaceId) return { user: { id: userId, email }, workspace: null, role: null };
    const workspace = await ctx.db.getRepository(Workspace).findOneByOrFail({ id: workspaceId });
    const [member] = (await ctx.db.query(`SELECT role FROM members WHERE workspace_id = $1 AND user_id = $2`, [workspaceId, userId])) as {
      role: Role;
    }[];
    return { user: { id: userId, email }, workspace: { id: workspace.id, name: workspace.name }, role: member?.role ?? null };
  }

  return s.router(contract.auth, {
    requestCode: async ({ body, req }) => {
      await ctx.services.signIn.requestCode(body.email, clientIp(req));
      return { status: 202, body: { ok: true } };
    },
    verify: async ({ body, req, res }) => {
      const session = await ctx.services.signIn.verify(body.email, body.code, clientIp(req));
      setSessionCookie(res, session.token, secureCookie);
      return { status: 200, body: (await sessionView(session.userId, body.email.toLowerCase(), session.workspaceId)) };
    },
    session: async ({ res }) => {
      const user = signedInUserOf(res);
      const principal = res.locals.principal as { workspaceId: string } | undefined;
      return { status: 200, body: (await sessionView(user.userId, user.email, principal?.workspaceId ?? null)) };
    },
    logout: async ({ res }) => {
      await ctx.services.signIn.logout(signedInUserOf(res).sessionId);
      clearSessionCookie(res, secureCookie);
      return { status: 204, body: undefined };
    },
  });
}
