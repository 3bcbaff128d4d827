// Dashboard sign-in by e-mailed code. Codes are six digits, stored as an HMAC under a server key
// (a plain hash of a 6-digit code is reversible by enumeration), live 10 minutes and allow 5
// attempts. Every verify failure is the same 401, and request-code answers the same whatever the
// address, so neither reveals who has an account.
// A day's failed verifications per address are capped (docs/decisions.md, "Sign-in guessing"):
// past the cap the live code is dropped, and new codes come at most one an hour with one attempt
// each, so the owner, who has the code, still signs in while a guesser gets one try an hour.
import { randomInt } from "node:crypto";
import type { DataSource } from "typeorm";
import type { Role, Session } from "../../contract/index.js";
import { rows } from "../db/rows.js";
import { ApiError } from "../http/errors.js";
import { DatabaseRateLimiter, rateLimitHeaders } from "../http/rate-limit.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { Mailer } from "../mail/mailer.js";
import { deriveKey, hmac, randomToken, safeEqual, sha256 } from "../secrets.js";
import { Workspace } from "../workspace/entities.js";
import { SESSION_TTL_MS } from "./session-cookie.js";

export const CODE_TTL_MS = 10 * 60_000;
export const MAX_ATTEMPTS = 5;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
/** Per window of 15 minutes (docs/decisions.md). */
export const SIGN_IN_LIMITS = { codesPerAddress: 5, codesPerIp: 20, verifiesPerIp: 30 };
/** Failed verifications per address and UTC day before the address is locked (docs/decisions.md). */
export const DAILY_FAILED_VERIFIES = 20;
const DAY_MS = 24 * 3600_000;
/** While locked: one code an hour, each allowing one attempt. */
const LOCKED_CODE_WINDOW_MS = 3600_000;

export class SignInService {
  private readonly codeKey: Buffer;
  private readonly limiter: DatabaseRateLimiter;

  constructor(
    private readonly db: DataSource,
    private readonly mailer: Mailer,
    private readonly logger: Logger,
    secretKey: Buffer,
  ) {
    this.codeKey = deriveKey(secretKey, "sign-in-code");
    this.limiter = new DatabaseRateLimiter(db);
  }

  async requestCode(rawEmail: string, ip: string): Promise<void> {
    const email = rawEmail.toLowerCase();
    for (const [bucket, limit] of [
      [`code-ip:${ip}`, SIGN_IN_LIMITS.codesPerIp],
      [`code-email:${email}`, SIGN_IN_LIMITS.codesPerAddress],
    ] as const) {
      const decision = await this.limiter.hit(bucket, limit, SIGN_IN_WINDOW_MS);
      if (!decision.allowed) throw new ApiError("rate_limited", "Too many sign-in codes requested; try again later.", { headers: rateLimitHeaders(decision) });
    }
    // Failures are counted for every address, existing or not, so the lock reveals nothing.
    const locked = (await this.limiter.count(`verify-fail:${email}`, DAY_MS)) >= DAILY_FAILED_VERIFIES;
    if (locked) {
      const decision = await this.limiter.hit(`code-locked:${email}`, 1, LOCKED_CODE_WINDOW_MS);
      if (!decision.allowed) throw new ApiError("rate_limited", "Too many failed sign-ins for this address today; one code an hour can be requested.", { headers: rateLimitHeaders(decision) });
    }
    if (!(await this.maySignIn(email))) return;
    const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
    await this.db.query(
      `INSERT INTO sign_in_codes (email, code_digest, attempts, expires_at, created_at)
       VALUES ($1, $2, $4, now() + ($3 || ' milliseconds')::interval, now())
       ON CONFLICT (email) DO UPDATE SET code_digest = EXCLUDED.code_digest, attempts = 0,
         expires_at = EXCLUDED.expires_at, created_at = now()`,
      [email, this.digest(email, code), String(CODE_TTL_MS), locked ? MAX_ATTEMPTS - 1 : 0],
    );
    // Not awaited: the response time must not reveal whether a mail was sent.
    this.mailer
      .send({
        kind: "sign_in",
        to: email,
        subject: `Your svc-gateway sign-in code: ${code}`,
        text: `Your sign-in code is ${code}\n\nIt expires in 10 minutes. If you did not ask for it, ignore this mail.\n`,
      })
      .catch((err: unknown) => this.logger.error({ err }, "sign-in mail failed, every attempt; the code was not sent"));
  }

  /** Returns the new session's token; throws the one uniform 401 on any failure. `code` may be any string (the
   *  contract does not check its shape): one that is not six digits never matches and fails like a wrong one. */
  async verify(rawEmail: string, code: string, ip: string): Promise<{ token: string; userId: string; workspaceId: string | null }> {
    const email = rawEmail.toLowerCase();
    const failure = new ApiError("unauthorized", "The code is wrong, expired or used up. Request a new code.");
    const perIp = await this.limiter.hit(`verify-ip:${ip}`, SIGN_IN_LIMITS.verifiesPerIp, SIGN_IN_WINDOW_MS);
    if (!perIp.allowed) throw failure;
    // Count the attempt before comparing, atomically, so parallel guesses cannot exceed the limit.
    const counted = await rows<{ code_digest: Buffer }>(
      this.db,
      `UPDATE sign_in_codes SET attempts = attempts + 1
        WHERE email = $1 AND expires_at > now() AND attempts < $2
        RETURNING code_digest`,
      [email, MAX_ATTEMPTS],
    );
    const stored = counted[0]?.code_digest;
    if (!stored || !safeEqual(stored, this.digest(email, code))) {
      const failures = await this.limiter.hit(`verify-fail:${email}`, DAILY_FAILED_VERIFIES, DAY_MS);
      if (failures.remaining === 0) await this.db.query(`DELETE FROM sign_in_codes WHERE email = $1`, [email]);
      throw failure;
    }
    const consumed = await rows(this.db, `DELETE FROM sign_in_codes WHERE email = $1 AND code_digest = $2 RETURNING email`, [email, stored]);
    if (consumed.length === 0) throw failure; // a parallel verify used it first

    return this.db.transaction(async (em) => {
      await em.query(`INSERT INTO users (id, email) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING`, [newId("usr"), email]);
      const [user] = (await em.query(`SELECT id FROM users WHERE email = $1`, [email])) as { id: string }[];
      const [membership] = (await em.query(
        `SELECT workspace_id FROM members WHERE user_id = $1 ORDER BY created_at ASC LIMIT 1`,
        [user!.id],
      )) as { workspace_id: string }[];
      const token = randomToken(32);
      await em.query(
        `INSERT INTO sessions (id, token_digest, user_id, workspace_id, expires_at)
         VALUES ($1, $2, $3, $4, now() + ($5 || ' milliseconds')::interval)`,
        [newId("ses"), sha256(token), user!.id, membership?.workspace_id ?? null, String(SESSION_TTL_MS)],
      );
      return { token, userId: user!.id, workspaceId: membership?.workspace_id ?? null };
    });
  }

  /** What a signed-in user sees of their session: who, the workspace it is in (if any) and their role there. */
  async sessionView(userId: string, email: string, workspaceId: string | null): Promise<Session> {
    if (!workspaceId) return { user: { id: userId, email }, workspace: null, role: null };
    const workspace = await this.db.getRepository(Workspace).findOneByOrFail({ id: workspaceId });
    const [member] = await rows<{ role: Role }>(this.db, `SELECT role FROM members WHERE workspace_id = $1 AND user_id = $2`, [workspaceId, userId]);
    return { user: { id: userId, email }, workspace: { id: workspace.id, name: workspace.name }, role: member?.role ?? null };
  }

  async logout(sessionId: string): Promise<void> {
    await this.db.query(`DELETE FROM sessions WHERE id = $1`, [sessionId]);
  }

  /** Members of a workspace, and addresses with a pending invitation, may sign in. */
  private async maySignIn(email: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `SELECT 1 FROM users u JOIN members m ON m.user_id = u.id WHERE u.email = $1
       UNION ALL
       SELECT 1 FROM invitations WHERE email = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
       LIMIT 1`,
      [email],
    );
    return rows.length > 0;
  }

  private digest(email: string, code: string): Buffer {
    return hmac(this.codeKey, `${email}:${code}`);
  }
}
