// The send rules, once: whether a message may be written now, decided from facts the caller has
// already read (the accepting statement's row, a schedule claim). Pure: it returns a refusal
// value; the HTTP edge turns one into a problem response, schedule firing into a failed message.
//
// The accepting statement (store/accept.ts) also holds these rules in SQL, as the guard of its
// writes, so that a send stays one round trip; this function then explains what the guard did.

/** A send the rules of the moment refuse (connection, plan, allowance). */
export type RuleRefusal =
  | { code: "connection_not_found"; slug: string }
  | { code: "plan_required"; plan: string }
  | { code: "connection_not_ready"; slug: string; state: string }
  | { code: "quota_exceeded"; plan: string; allowance: number };

/**
 * Every way a send is refused, as a value: the rules above, content no engine can send (checked
 * before anything is read), and an Idempotency-Key used with another body or still in flight.
 */
export type SendRefusal =
  | RuleRefusal
  | { code: "invalid_content"; errors: { path: string; message: string }[] }
  | { code: "idempotency_mismatch" }
  | { code: "idempotency_in_flight" };

export function isRefusal<T extends object>(outcome: T | SendRefusal): outcome is SendRefusal {
  return "code" in outcome && typeof (outcome as { code: unknown }).code === "string";
}

export interface SendFacts {
  /** The connection the send names. */
  slug: string;
  /** The live connection with that slug, or null when the workspace has none. */
  connection: { state: string } | null;
  plan: { name: string; scheduling: boolean; messagesPerMonth: number | null };
  /** Outbound messages of the workspace this UTC month, before this one. */
  used: number;
  /** The message waits for a later moment (send_at, a schedule): the plan must include scheduling. */
  later: boolean;
  /** The message goes to the engine now: the connection must be connected. */
  now: boolean;
}

/** Why the send may not be written, or null when every rule holds. The order is the order of the checks users see. */
export function sendRefusal(f: SendFacts): RuleRefusal | null {
  if (!f.connection) return { code: "connection_not_found", slug: f.slug };
  if (f.later && !f.plan.scheduling) return { code: "plan_required", plan: f.plan.name };
  if (f.now && f.connection.state !== "connected") return { code: "connection_not_ready", slug: f.slug, state: f.connection.state };
  const allowance = f.plan.messagesPerMonth;
  if (allowance !== null && f.used >= allowance) return { code: "quota_exceeded", plan: f.plan.name, allowance };
  return null;
}

/** The sentence that explains a refusal, to a caller (problem detail) or on a failed message. */
export function refusalText(r: SendRefusal): string {
  switch (r.code) {
    case "connection_not_found":
      return `No connection with slug ${r.slug} exists in the workspace.`;
    case "plan_required":
      return `The ${r.plan} plan does not include scheduling.`;
    case "connection_not_ready":
      return `The connection ${r.slug} is ${r.state}, not connected.`;
    case "quota_exceeded":
      return `The ${r.plan} plan allows ${r.allowance} messages a month.`;
    case "invalid_content":
      return r.errors.map((e) => `${e.path}: ${e.message}`).join("; ");
    case "idempotency_mismatch":
      return "This Idempotency-Key was used with a different request body.";
    case "idempotency_in_flight":
      return "A request with this Idempotency-Key is still in flight; retry shortly.";
  }
}
