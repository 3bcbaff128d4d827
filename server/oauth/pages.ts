// The two server-rendered pages of the authorization flow, small on purpose (the dashboard will
// replace them): sign-in with the e-mailed code the API already has, and the consent page. Every
// page forbids framing (clickjacking); every form post must come from this origin with the CSRF
// token bound to the session and the authorization request.
import { Router, type Request, type Response } from "express";
import { parse as parseCookies } from "cookie";
import { RequestCodeBody, VerifyCodeBody } from "../../contract/auth.js";
import type { AppContext } from "../context.js";
import { resolveSession, type ResolvedSession } from "../auth/credentials.js";
import { SESSION_COOKIE, secureCookies, setSessionCookie } from "../auth/session-cookie.js";
import { isCrossSite } from "../http/authenticate.js";
import { ApiError } from "../http/errors.js";
import { clientIp } from "../http/principal.js";
import { Workspace } from "../workspace/entities.js";
import { PERMISSIONS } from "../workspace/roles.js";
import { clientRedirect, RequestSigner, type AuthorizationRequest } from "./authorize-request.js";
import { approve } from "./grants.js";
import { cappedScopes } from "./tokens.js";

export const CONSENT_PATH = "/oauth/consent";
export const SIGN_IN_PATH = "/oauth/sign-in";

const SCOPE_TEXT: Record<string, string> = {
  "mcp:read": "See the workspace's connections, message statuses (never their content), schedules, usage and webhook deliveries",
  "mcp:write": "Send messages, cancel messages, and pause, resume or cancel schedules (each previewed before it acts)",
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(res: Response, status: number, title: string, body: string): void {
  res.status(status);
  res.setHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.type("html").send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · svc-gateway</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
button{font:inherit;padding:.5rem 1rem;margin-right:.5rem}input{font:inherit;padding:.4rem;width:100%;box-sizing:border-box}
.error{color:#a00}li{margin:.3rem 0}</style></head>
<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`);
}

export function oauthPages(ctx: AppContext, signer: RequestSigner, issuer: string): Router {
  const router = Router();
  const trustedOrigins = [...new Set([new URL(ctx.config.webUrl).origin, new URL(ctx.config.baseUrl).origin])];
  const secure = secureCookies(ctx.config);

  async function session(req: Request): Promise<ResolvedSession | null> {
    const token = parseCookies(req.headers.cookie ?? "")[SESSION_COOKIE];
    return token ? resolveSession(ctx.db, token) : null;
  }

  function sealedOf(req: Request): { sealed: string; request: AuthorizationRequest } | null {
    const sealed = typeof req.query.request === "string" ? req.query.request : typeof req.body?.request === "string" ? (req.body.request as string) : "";
    const request = signer.open(sealed);
    return request ? { sealed, request } : null;
  }

  const expired = (res: Response) =>
    page(res, 400, "This request has expired", "<p>Start again from your application: the authorization request is unknown, altered or older than ten minutes.</p>");

  function crossSite(req: Request, res: Response): boolean {
    if (!isCrossSite(req, trustedOrigins)) return false;
    page(res, 403, "Refused", "<p>This form must be sent from this site.</p>");
    return true;
  }

  router.get(CONSENT_PATH, async (req, res, next) => {
    try {
      const found = sealedOf(req);
      if (!found) return expired(res);
      const signedIn = await session(req);
      if (!signedIn) return res.redirect(303, `${SIGN_IN_PATH}?next=${encodeURIComponent(`${CONSENT_PATH}?request=${found.sealed}`)}`);
      const { request, sealed } = found;
      const p = signedIn.principal;
      if (!p) return page(res, 403, "No workspace yet", "<p>You are signed in but not a member of a workspace. Accept an invitation first.</p>");
      const workspace = await ctx.db.getRepository(Workspace).findOneByOrFail({ id: p.workspaceId });
      const client = escapeHtml(request.clientName ?? request.clientId);
      const host = escapeHtml(new URL(request.redirectUri).host);
      const scopes = request.scopes.map((s) => `<li><strong>${escapeHtml(s)}</strong>: ${escapeHtml(SCOPE_TEXT[s] ?? s)}</li>`).join("");
      const mayApprove = PERMISSIONS[p.role].approveOAuth;
      const csrf = signer.csrf(signedIn.user.sessionId, sealed);
      const hidden = `<input type="hidden" name="request" value="${escapeHtml(sealed)}"><input type="hidden" name="csrf" value="${escapeHtml(csrf)}">`;
      const buttons = mayApprove
        ? `<button type="submit" name="decision" value="approve">Approve</button><button type="submit" name="decision" value="deny">Deny</button>`
        : `<p class="error">Your role (${escapeHtml(p.role)}) cannot approve tool access; an owner, admin or developer can.</p><button type="submit" name="decision" value="deny">Deny</button>`;
      page(
        res,
        mayApprove ? 200 : 403,
        "Allow access to your workspace?",
        `<p><strong>${client}</strong> asks for access to the workspace <strong>${escapeHtml(workspace.name)}</strong> as ${escapeHtml(signedIn.user.email)}.</p>
<p>After your decision you return to <strong>${host}</strong>.</p><p>It will be able to:</p><ul>${scopes}</ul>
<form method="post" action="${CONSENT_PATH}">${hidden}${buttons}</form>`,
      );
    } catch (err) {
      next(err);
    }
  });

  router.post(CONSENT_PATH, async (req, res, next) => {
    try {
      if (crossSite(req, res)) return;
      const found = sealedOf(req);
      if (!found) return expired(res);
      const signedIn = await session(req);
      const csrf = typeof req.body?.csrf === "string" ? (req.body.csrf as string) : "";
      if (!signedIn || !signer.csrfMatches(signedIn.user.sessionId, found.sealed, csrf)) {
        return page(res, 403, "Refused", "<p>This form is not valid for your session. Start again from your application.</p>");
      }
      const { request } = found;
      if (req.body?.decision !== "approve") {
        return res.redirect(303, clientRedirect(request, issuer, { error: "access_denied", error_description: "The member denied the request." }));
      }
      const p = signedIn.principal;
      const scopes = p ? cappedScopes(request.scopes, p.role) : [];
      if (!p || !PERMISSIONS[p.role].approveOAuth || scopes.length === 0) {
        return page(res, 403, "Not allowed", "<p>Only an owner, admin or developer of the workspace can approve tool access.</p>");
      }
      const code = await approve(ctx.db, {
        workspaceId: p.workspaceId,
        userId: p.userId,
        clientId: request.clientId,
        clientName: request.clientName,
        redirectUri: request.redirectUri,
        scopes,
        resource: request.resource,
        codeChallenge: request.codeChallenge,
      });
      res.redirect(303, clientRedirect(request, issuer, { code }));
    } catch (err) {
      next(err);
    }
  });

  /** Only the consent page is a place to come back to after signing in. */
  const nextOf = (v: unknown) => (typeof v === "string" && v.startsWith(`${CONSENT_PATH}?`) ? v : null);

  const emailForm = (next: string, error = "") =>
    `${error}<form method="post" action="${SIGN_IN_PATH}"><input type="hidden" name="next" value="${escapeHtml(next)}">
<label>E-mail address <input type="email" name="email" required maxlength="320" autocomplete="email"></label><p><button type="submit">Send me a code</button></p></form>`;

  const codeForm = (next: string, email: string, error = "") =>
    `${error}<p>If ${escapeHtml(email)} has an account, a six-digit code is on its way.</p>
<form method="post" action="${SIGN_IN_PATH}/verify"><input type="hidden" name="next" value="${escapeHtml(next)}"><input type="hidden" name="email" value="${escapeHtml(email)}">
<label>Code <input name="code" inputmode="numeric" pattern="\\d{6}" required maxlength="6" autocomplete="one-time-code"></label><p><button type="submit">Sign in</button></p></form>`;

  router.get(SIGN_IN_PATH, (req, res) => {
    const next = nextOf(req.query.next);
    if (!next) return expired(res);
    page(res, 200, "Sign in", emailForm(next));
  });

  router.post(SIGN_IN_PATH, async (req, res, next) => {
    try {
      if (crossSite(req, res)) return;
      const back = nextOf(req.body?.next);
      if (!back) return expired(res);
      const email = typeof req.body?.email === "string" ? (req.body.email as string) : "";
      if (!RequestCodeBody.safeParse({ email }).success) {
        return page(res, 400, "Sign in", emailForm(back, `<p class="error">Enter an e-mail address.</p>`));
      }
      try {
        await ctx.services.signIn.requestCode(email, clientIp(req));
      } catch (err) {
        if (!(err instanceof ApiError) || err.status >= 500) throw err;
        return page(res, err.status, "Sign in", emailForm(back, `<p class="error">${escapeHtml(err.message)}</p>`));
      }
      page(res, 200, "Enter your code", codeForm(back, email));
    } catch (err) {
      next(err);
    }
  });

  router.post(`${SIGN_IN_PATH}/verify`, async (req, res, next) => {
    try {
      if (crossSite(req, res)) return;
      const back = nextOf(req.body?.next);
      if (!back) return expired(res);
      const email = typeof req.body?.email === "string" ? (req.body.email as string) : "";
      const code = typeof req.body?.code === "string" ? (req.body.code as string) : "";
      try {
        // A malformed code fails like a wrong one (spec 5.9: one uniform error).
        if (!VerifyCodeBody.safeParse({ email, code }).success) throw new ApiError("unauthorized", "The code is wrong, expired or used up. Request a new code.");
        const signedIn = await ctx.services.signIn.verify(email, code, clientIp(req));
        setSessionCookie(res, signedIn.token, secure);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status >= 500) throw err;
        return page(res, err.status, "Enter your code", codeForm(back, email, `<p class="error">${escapeHtml(err.message)}</p>`));
      }
      res.redirect(303, back);
    } catch (err) {
      next(err);
    }
  });

  return router;
}
