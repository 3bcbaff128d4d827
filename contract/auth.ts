// Dashboard sign-in (README.md, "The dashboard"). Bodies are `.strict()`: unknown fields are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { EmailAddress, NoBody, Role, problems, type RouteMetadata } from "./common.js";

const c = initContract();

const SignInEmail = EmailAddress.max(320);

export const RequestCodeBody = z.object({ email: SignInEmail }).strict();
export type RequestCodeBody = z.infer<typeof RequestCodeBody>;

/** The shape of a mailed sign-in code, for forms that check it before sending (the server does not: see below). */
export const SignInCode = z.string().regex(/^\d{6}$/, "must be the six digits from the e-mail");

// `code` is any string: the mailed code is six digits (`^\d{6}$`), but a code of another shape is
// a wrong code, answered with the same 401 and counted as a failed attempt, so the verify answer
// never differs by the guess's shape (docs/decisions.md, "Identity": every verify failure is the same error). A body
// without `code`, or with a non-string one, is a malformed request: 400 (docs/decisions.md).
export const VerifyCodeBody = z
  .object({
    email: SignInEmail,
    code: z.string().describe("The six-digit code from the mail. Any other value is a wrong code: the same 401, counted as a failed attempt."),
  })
  .strict();
export type VerifyCodeBody = z.infer<typeof VerifyCodeBody>;

// Byte-for-byte the same for every address so the answer does not reveal who has an account.
export const CodeRequested = z.object({ ok: z.literal(true) });
export type CodeRequested = z.infer<typeof CodeRequested>;

// `workspace` and `role` are null for an invited address that has signed in but not yet accepted.
export const Session = z.object({
  user: z.object({ id: z.string(), email: z.string() }),
  workspace: z.object({ id: z.string(), name: z.string() }).nullable(),
  role: Role.nullable(),
});
export type Session = z.infer<typeof Session>;

const none = { security: { auth: "none" }, tag: "Auth" } satisfies RouteMetadata;
const session = { security: { auth: "session" }, tag: "Auth" } satisfies RouteMetadata;

export const auth = c.router(
  {
    requestCode: {
      method: "POST",
      path: "/v1/auth/request-code",
      summary: "E-mail a six-digit sign-in code",
      description: "Always 202 with the same body, whether or not the address has an account.",
      body: RequestCodeBody,
      responses: { 202: CodeRequested, ...problems(400, 429) },
      metadata: none,
    },
    verify: {
      method: "POST",
      path: "/v1/auth/verify",
      summary: "Exchange the code for a session",
      description: "Sets the HttpOnly `svc_session` cookie. Every failure (missing, wrong, expired, too many attempts) is the same 401.",
      body: VerifyCodeBody,
      responses: { 200: Session, ...problems(400, 401, 429) },
      metadata: none,
    },
    session: {
      method: "GET",
      path: "/v1/auth/session",
      summary: "The signed-in user and workspace",
      responses: { 200: Session, ...problems(401, 429) },
      metadata: session,
    },
    logout: {
      method: "POST",
      path: "/v1/auth/logout",
      summary: "End the session",
      description: "Invalidates the session and clears the cookie.",
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(401, 429) },
      metadata: session,
    },
  },
  { strictStatusCodes: true },
);
