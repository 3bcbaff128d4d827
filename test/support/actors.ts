// The people and credentials a test needs, obtained the way users obtain them: a workspace from the
// operator's service, a session by signing in with the e-mailed code, keys issued over the API.
import { randomBytes } from "node:crypto";
import type { IssuableScope, Role } from "../../contract/index.js";
import { createClient, expectOk } from "../../sdk/src/index.js";
import { testEnv } from "../setup.js";

export type Client = ReturnType<typeof createClient>;

export function uniqueEmail(label = "user"): string {
  return `${label}-${randomBytes(5).toString("hex")}@example.test`;
}

/** A valid address of exactly `length` characters (64-character local part, long host name). */
export function emailOfLength(length: number): string {
  const local = "a".repeat(64);
  let host = "";
  const hostLength = length - 65;
  while (host.length + 60 < hostLength) host += "b".repeat(59) + ".";
  host += "c".repeat(hostLength - host.length);
  return `${local}@${host}`;
}

export function sdk(credential: { apiKey?: string; cookie?: string } = {}): Client {
  return createClient({ baseUrl: testEnv().baseUrl, ...credential });
}

/** Raw HTTP for what the SDK deliberately hides (headers, malformed input). */
export async function http(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; raw?: string } = {}) {
  const res = await fetch(testEnv().baseUrl + path, {
    method,
    headers: { ...(init.body !== undefined || init.raw !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    body: init.raw ?? (init.body !== undefined ? JSON.stringify(init.body) : undefined),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON (CSV, text): json stays undefined
  }
  return { status: res.status, headers: res.headers, text, json: json as Record<string, unknown> & { code?: string } };
}

/**
 * What the dashboard's own page sends with a change made with its session: the cookie and the
 * page's origin (a browser adds Origin to every POST, PUT, PATCH and DELETE).
 */
export function fromDashboard(cookie: string): Record<string, string> {
  return { cookie, origin: new URL(testEnv().gateway.ctx.config.webUrl).origin };
}

/** A distinct client address per simulated user, so per-IP limits of one test do not touch another. */
export function clientAddress(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]}`;
}

/**
 * Requests a code, reads it from the SMTP capture, verifies it: returns the session cookie. On
 * the test gateway unless `baseUrl` names another (one started by a test, mailing the capture).
 */
export async function signIn(email: string, ip = clientAddress(), baseUrl = testEnv().baseUrl): Promise<string> {
  const { mailbox } = testEnv();
  const since = mailbox.mails.length;
  const headers = { "x-forwarded-for": ip };
  const requested = await createClient({ baseUrl, headers }).auth.requestCode({ body: { email } });
  if (requested.status !== 202) throw new Error(`request-code answered ${requested.status}`);
  const [, code] = await mailbox.waitFor(email, /sign-in code is (\d{6})/, since);
  const verified = await fetch(`${baseUrl}/v1/auth/verify`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ email, code }),
  });
  if (verified.status !== 200) throw new Error(`verify answered ${verified.status}`);
  const cookie = verified.headers.getSetCookie().find((c) => c.startsWith("svc_session="));
  if (!cookie) throw new Error("no svc_session cookie");
  return cookie.split(";")[0]!;
}

export interface Member {
  email: string;
  cookie: string;
  client: Client;
}

export interface TestWorkspace {
  id: string;
  owner: Member;
  /** Issues a key as `by` (default the owner) and returns an SDK client using it. */
  key(scopes: IssuableScope[], by?: Member, environment?: "live" | "test"): Promise<{ key: string; id: string; client: Client }>;
  /** Invites `role`, signs the invitee in and accepts: returns the new member. */
  addMember(role: Role): Promise<Member>;
}

export async function newWorkspace(plan = "pro"): Promise<TestWorkspace> {
  const { gateway } = testEnv();
  const email = uniqueEmail("owner");
  const ws = await gateway.ctx.services.workspaces.create(`Workspace ${email}`, email, plan);
  const cookie = await signIn(email);
  const owner: Member = { email, cookie, client: sdk({ cookie }) };
  return {
    id: ws.id,
    owner,
    async key(scopes, by = owner, environment = "live") {
      const issued = await expectOk(by.client.workspace.createApiKey({ body: { name: "test key", scopes, environment } }));
      return { key: issued.key, id: issued.id, client: sdk({ apiKey: issued.key }) };
    },
    async addMember(role) {
      const memberEmail = uniqueEmail(role);
      const { mailbox } = testEnv();
      const since = mailbox.mails.length;
      // Member management is a paid feature; the test workspace may be on any plan.
      await gateway.ctx.services.workspaces.setPlan(ws.id, "enterprise");
      await expectOk(owner.client.team.invite({ body: { email: memberEmail, role } }));
      await gateway.ctx.services.workspaces.setPlan(ws.id, plan);
      const [, token] = await mailbox.waitFor(memberEmail, /token=([A-Za-z0-9_-]+)/, since);
      const memberCookie = await signIn(memberEmail);
      const client = sdk({ cookie: memberCookie });
      await expectOk(client.team.accept({ body: { token: token! } }));
      return { email: memberEmail, cookie: memberCookie, client };
    },
  };
}
