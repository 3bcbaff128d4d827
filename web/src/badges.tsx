// States as coloured badges: the same word the API uses, on a colour that says whether it is
// fine, under way, needs attention or is over. The word is always there (colour is never the
// only signal), and every pair of colours passes WCAG AA.
import type { AiRunOutcome, ConnectionState, GroupRole, MessageStatus, ParticipantOutcomeCode, WebhookDeliveryStatus } from "@svc/sdk/contract";
import type { Schedule } from "@svc/sdk";

export type Tone = "good" | "busy" | "info" | "warn" | "bad" | "quiet";

// Partial: a state added to the contract later shows as "quiet" until it is given a tone here.
const TONES: {
  connection: Partial<Record<ConnectionState, Tone>>;
  message: Partial<Record<MessageStatus, Tone>>;
  schedule: Partial<Record<Schedule["status"], Tone>>;
  delivery: Partial<Record<WebhookDeliveryStatus, Tone>>;
  run: Partial<Record<AiRunOutcome, Tone>>;
  participant: Partial<Record<ParticipantOutcomeCode, Tone>>;
  groupRole: Partial<Record<GroupRole, Tone>>;
} = {
  connection: { created: "quiet", pairing: "busy", connected: "good", disconnected: "bad", suspended: "warn" },
  message: {
    scheduled: "info",
    accepted: "busy",
    queued: "busy",
    submitting: "busy",
    submitted: "info",
    sent: "good",
    delivered: "good",
    read: "good",
    failed: "bad",
    canceled: "quiet",
  },
  schedule: { active: "good", paused: "warn", completed: "quiet", canceled: "quiet" },
  delivery: { pending: "busy", succeeded: "good", failed: "bad", canceled: "quiet" },
  run: { drafted: "good", replied: "good", cost_limit_reached: "warn", rate_limited: "warn", human_active: "info", credential_missing: "bad", vendor_error: "bad" },
  participant: {
    added: "good",
    already_member: "quiet",
    not_on_network: "bad",
    invited: "info",
    refused: "bad",
    removed: "good",
    promoted: "good",
    demoted: "good",
    not_member: "warn",
  },
  groupRole: { superadmin: "info", admin: "info", member: "quiet" },
};

export type BadgeKind = keyof typeof TONES;

/** The state `value` of a `kind` of thing as a badge; `label` is its accessible name when one is needed (e.g. "State of front-desk"). */
export function StateBadge({ kind, value, label }: { kind: BadgeKind; value: string; label?: string }) {
  const tone = (TONES[kind] as Partial<Record<string, Tone>>)[value] ?? "quiet";
  return <Badge tone={tone} label={label}>{value}</Badge>;
}

export function Badge({ tone, label, children }: { tone: Tone; label?: string; children: string }) {
  return (
    <span className={`badge badge-${tone}`} aria-label={label}>
      {children}
    </span>
  );
}
