// Shapes shared by every resource of the contract. This folder is the only place a field's shape
// or limit is written: the server, the SDK and the OpenAPI document all read it from here.
import { z, ZodString, type ParseInput, type ParseReturnType, type RawCreateParams, type SyncParseReturnType, type ZodStringCheck } from "zod";

/** A string's length in characters (Unicode code points), as the spec and JSON Schema count it. */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** A UTF-16 surrogate: where a string has one, its characters and its code units may count differently. */
const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * A zod string whose `.min()`, `.max()` and `.length()` count characters (code points) instead of
 * UTF-16 code units: "max 4096 characters" takes 4096 emoji, as the OpenAPI document's
 * `maxLength` (JSON Schema counts code points) promises. It stays a `ZodString` with the same
 * checks, so zod-to-json-schema still writes minLength/maxLength and web/src/schema-limits.ts still
 * reads `minLength`/`maxLength`; every check added to it keeps the class.
 */
export class ZodCharString extends ZodString {
  // Built once per schema, on first use: constructing zod types is costly, and every send parses several.
  #checks?: { asCodeUnits: ZodString; other: ZodString; lengths: ZodString };

  override _parse(input: ParseInput): ParseReturnType<string> {
    const { asCodeUnits, other: otherChecks, lengths } = (this.#checks ??= this.splitChecks());
    // Without a surrogate pair, characters and code units count alike: zod's checks in one pass,
    // the length checks last, so the issues come in the order the split below gives them.
    if (!this._def.coerce && (typeof input.data !== "string" || !SURROGATE.test(input.data))) return asCodeUnits._parse(input);
    const other = otherChecks._parse(input) as SyncParseReturnType<string>;
    if (lengths._def.checks.length === 0 || other.status === "aborted") return other;
    // zod's own length checks (its messages, error maps and path) on one code unit per character.
    const counted = lengths._parse({
      data: "x".repeat(charCount(other.value)),
      path: input.path,
      parent: input.parent,
    }) as SyncParseReturnType<string>;
    if (counted.status === "aborted") return counted;
    return other.status === "dirty" || counted.status === "dirty" ? { status: "dirty", value: other.value } : other;
  }

  /** The length checks apart from the others, and all of them with the length checks last. */
  private splitChecks(): { asCodeUnits: ZodString; other: ZodString; lengths: ZodString } {
    const isLength = (c: ZodStringCheck) => c.kind === "min" || c.kind === "max" || c.kind === "length";
    const other = this._def.checks.filter((c) => !isLength(c));
    const lengths = this._def.checks.filter(isLength);
    const withChecks = (checks: ZodStringCheck[]) => new ZodString({ ...this._def, checks });
    return { asCodeUnits: withChecks([...other, ...lengths]), other: withChecks(other), lengths: withChecks(lengths) };
  }

  override _addCheck(check: ZodStringCheck): ZodCharString {
    return new ZodCharString({ ...this._def, checks: [...this._def.checks, check] });
  }
}

/** A string of `min` to `max` characters (code points); the one way the contract writes a string limit. */
export function chars(min = 0, max?: number, params?: RawCreateParams): ZodCharString {
  let s = new ZodCharString(z.string(params)._def);
  if (min > 0) s = s.min(min) as ZodCharString;
  if (max !== undefined) s = s.max(max) as ZodCharString;
  return s;
}

/** Every scope a credential can carry (docs/decisions.md, "Identity"). `usage:read` exists but cannot be issued. */
export const ALL_SCOPES = [
  "messages:read",
  "messages:write",
  "connections:read",
  "connections:write",
  "webhooks:read",
  "webhooks:write",
  "schedules:read",
  "schedules:write",
  "ai:read",
  "ai:write",
  "mcp:read",
  "mcp:write",
  "usage:read",
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/** The twelve scopes an API key may be issued with (docs/decisions.md, "Identity"). */
export const ISSUABLE_SCOPES = ALL_SCOPES.filter((s) => s !== "usage:read") as Exclude<Scope, "usage:read">[];
export const IssuableScope = z.enum(ISSUABLE_SCOPES as [Exclude<Scope, "usage:read">, ...Exclude<Scope, "usage:read">[]]);
export const ScopeSchema = z.enum(ALL_SCOPES);

export const ROLES = ["owner", "admin", "developer", "viewer", "billing"] as const;
export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;

export const MESSAGE_STATUSES = [
  "scheduled",
  "accepted",
  "queued",
  "submitting",
  "submitted",
  "sent",
  "delivered",
  "read",
  "failed",
  "canceled",
] as const;
export const MessageStatus = z.enum(MESSAGE_STATUSES);
export type MessageStatus = z.infer<typeof MessageStatus>;

export const Direction = z.enum(["inbound", "outbound"]);

export const PLAN_FEATURES = ["scheduling", "connection_webhooks", "ai", "mcp", "member_management"] as const;
export type PlanFeature = (typeof PLAN_FEATURES)[number];

/**
 * How a route is authenticated, declared next to the route and enforced by one middleware.
 * `key`: an API key holding `scope` (no scope → any key, e.g. whoami). `session`: the dashboard
 * cookie. `key_or_session`: either (webhook endpoints; connections, messages read, schedules and AI, for the dashboard); a session
 * passes a read scope always and a write scope when its role may grant it (contract/permissions.ts). `mcp`: an API key with `scope`
 * or an OAuth access token. `none`: public.
 */
export type RouteAuth =
  | { auth: "none" }
  | { auth: "session" }
  | { auth: "key"; scope?: Scope }
  | { auth: "key_or_session"; scope: Scope }
  | { auth: "mcp"; scope: Scope };

export interface RouteMetadata {
  security: RouteAuth;
  /** The plan feature this operation requires (402 otherwise). */
  feature?: PlanFeature;
  /** Tag for OpenAPI grouping. */
  tag: string;
}

/**
 * Every `code` a problem of this API carries. The server's table of statuses and titles
 * (server/http/errors.ts) must cover exactly these; the SDK types SvcApiError.code with them.
 */
export const PROBLEM_CODES = [
  "validation_failed",
  "unauthorized",
  "plan_required",
  "forbidden",
  "not_group_admin",
  "insufficient_scope",
  "cross_site_request",
  "not_found",
  "method_not_allowed",
  "invalid_state",
  "connection_not_ready",
  "idempotency_in_flight",
  "slug_taken",
  "already_member",
  "owner_required",
  "payload_too_large",
  "media_too_large",
  "gone",
  "idempotency_mismatch",
  "rate_limited",
  "quota_exceeded",
  "internal",
  "unavailable",
  "transport_unavailable",
] as const;
export const ProblemCode = z.enum(PROBLEM_CODES);
export type ProblemCode = z.infer<typeof ProblemCode>;

/** RFC 9457 problem details, with the stable `code` and the `request_id` of every error. */
export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    code: ProblemCode,
    request_id: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .passthrough();
export type Problem = z.infer<typeof Problem>;

/** Error responses declared on a route, each the problem schema. */
export function problems<S extends number>(...statuses: S[]): Record<S, typeof Problem> {
  return Object.fromEntries(statuses.map((s) => [s, Problem])) as Record<S, typeof Problem>;
}

/** Responses with no body (204). */
export const NoBody = z.undefined();

/** RFC 3339 date-time with a mandatory zone designator and a real calendar date. */
export const ZonedDateTime = chars(0, 64)
  .refine(isRealZonedDateTime, { message: "must be an RFC 3339 date-time with a zone designator (Z or ±hh:mm) and a real calendar date" });

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;

export function isRealZonedDateTime(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1) return false;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[9]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return false;
  }
  return true;
}

/**
 * An e-mail address: local part, then a host name whose labels are letters, digits and hyphens.
 * Single-label hosts are allowed (`admin@localhost` is the development owner), which zod's
 * `.email()` refuses. The OpenAPI document gives the pattern without `format: email`, whose
 * usual implementations require a dot in the host and would refuse `admin@localhost`.
 */
export const EMAIL_PATTERN = /^[^\s@"(),:;<>[\\\]]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
export const EmailAddress = chars().regex(EMAIL_PATTERN, "must be an e-mail address");

/** A free-form JSON object with string keys. */
export const FreeObject = z.record(z.string(), z.unknown());

/** Cursor page of any item. */
export function page<T extends z.ZodTypeAny>(item: T) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

/** Prefixed, time-sortable identifier, e.g. `msg_01J…`. */
export const Id = (prefix: string) => chars(1, 64).describe(`Identifier with prefix \`${prefix}_\``);

export const Timestamp = z.string().describe("RFC 3339 UTC instant");

// ---- Added with the full contract (additions only; nothing above changes). ----

/** A connection reference (its slug) wherever one is named: paths, queries, bodies (1-40 characters). */
export const ConnectionRef = chars(1, 40);

/** IANA timezone name; whether it exists is the server's check (400 with its own message). */
export const TimezoneName = chars(1, 64);

/** Path parameter `id` of every resource addressed by identifier. */
export const IdParams = z.object({ id: chars(1, 64) });

/** Path parameter `connection` (the slug). Lookups accept 1-40 and answer 404, not 400, for unknown slugs. */
export const ConnectionParams = z.object({ connection: ConnectionRef });

/**
 * An integer query parameter (query strings arrive as strings, hence the coercion). Every way it
 * can be wrong (not a number, `abc` coerced to NaN, a fraction, out of range) gets the one message
 * naming the rule, instead of zod's `Expected number, received nan`.
 */
export function queryInteger(min: number, max: number) {
  const message = `must be an integer from ${min} to ${max}`;
  return z.coerce.number({ errorMap: () => ({ message }) }).int().min(min).max(max);
}

/** Largest integer every JSON parser reads exactly (2^53 - 1), the ceiling of the spec's cost fields. */
export const MAX_SAFE_INT = 9007199254740991;

/** A non-paginated list (everything fits on one page). */
export function list<T extends z.ZodTypeAny>(item: T) {
  return z.object({ data: z.array(item) });
}

/** `{code, message}` of a failed message or provider status. */
export const ErrorInfo = z.object({ code: z.string(), message: z.string() });

export type IssuableScope = z.infer<typeof IssuableScope>;
export type Direction = z.infer<typeof Direction>;
export type IdParams = z.infer<typeof IdParams>;
export type ConnectionParams = z.infer<typeof ConnectionParams>;
export type ErrorInfo = z.infer<typeof ErrorInfo>;
