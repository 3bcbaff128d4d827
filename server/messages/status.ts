// The message status lifecycle (docs/decisions.md, "Messaging"), as data. NEXT says which moves exist; ACTIONS names
// what the gateway does to a message and the statuses each applies from, checked against NEXT when
// this module loads. The store (server/messages/store/) writes every move with the statuses it
// reads here, and provider reports are decided by `transition()`: nothing else decides a move.
import type { MessageStatus } from "../../contract/index.js";

/** Progress order. A status never moves to a lower rank; failed/canceled are terminal. */
const RANK: Record<MessageStatus, number> = {
  scheduled: 0,
  accepted: 1,
  queued: 2,
  submitting: 3,
  submitted: 4,
  sent: 5,
  delivered: 6,
  read: 7,
  failed: 100,
  canceled: 100,
};

/** Allowed moves. Skipping forward is allowed (a `read` receipt may arrive before `delivered`). */
const NEXT: Record<MessageStatus, readonly MessageStatus[]> = {
  // rescheduling keeps a message scheduled
  scheduled: ["scheduled", "accepted", "queued", "failed", "canceled"],
  accepted: ["queued", "submitting", "failed", "canceled"],
  queued: ["submitting", "failed", "canceled"],
  // a crashed hand-off is retried: submitting may go back to queued, or be marked again by the
  // dispatcher that claims it after the lock expired
  submitting: ["queued", "submitting", "submitted", "sent", "delivered", "read", "failed"],
  submitted: ["sent", "delivered", "read", "failed"],
  sent: ["delivered", "read", "failed"],
  delivered: ["read"],
  read: [],
  failed: [],
  canceled: [],
};

export const CANCELABLE: readonly MessageStatus[] = ["scheduled", "accepted", "queued"];

/** What the gateway does to a message, each from the statuses it applies to, to one status. */
export type MessageAction = "markSubmitting" | "recordSubmitted" | "recordRetry" | "recordFailed" | "cancel" | "reschedule" | "release" | "expire";

const ACTIONS: Record<MessageAction, { from: readonly MessageStatus[]; to: MessageStatus }> = {
  /** The dispatcher hands a claimed message to its engine. */
  markSubmitting: { from: ["accepted", "queued", "submitting"], to: "submitting" },
  /** The engine took it. A report may have moved it further already: then only the id is kept. */
  recordSubmitted: { from: ["submitting"], to: "submitted" },
  /** The engine failed transiently: back to the queue, with a backoff. */
  recordRetry: { from: ["submitting"], to: "queued" },
  /** The engine failed for good, or too often. */
  recordFailed: { from: ["queued", "submitting"], to: "failed" },
  cancel: { from: CANCELABLE, to: "canceled" },
  reschedule: { from: ["scheduled"], to: "scheduled" },
  /** A deferred send's time has come. */
  release: { from: ["scheduled"], to: "queued" },
  /** A deferred send's time has come and its connection cannot send. */
  expire: { from: ["scheduled"], to: "failed" },
};

for (const [action, { from, to }] of Object.entries(ACTIONS)) {
  for (const f of from) if (!NEXT[f].includes(to)) throw new Error(`message action ${action}: ${f} → ${to} is not a move of the lifecycle`);
}

/** The statuses `action` applies from (for SQL guards: `status = ANY(...)`). */
export function sourcesOf(action: MessageAction): readonly MessageStatus[] {
  return ACTIONS[action].from;
}

/** The status `action` moves a message to. */
export function targetOf(action: MessageAction): MessageStatus {
  return ACTIONS[action].to;
}

export type TransitionResult =
  /** Apply the new status. */
  | { apply: true }
  /** Not applied; a late report (e.g. delivered after read) is still worth a timeline entry. */
  | { apply: false; recordInTimeline: boolean };

export function transition(from: MessageStatus, to: MessageStatus): TransitionResult {
  if (NEXT[from].includes(to)) return { apply: true };
  // A provider report that arrives late (lower rank than where we are) is history, not a move.
  const late = RANK[to] < RANK[from] && RANK[to] >= RANK.submitted && from !== "canceled";
  return { apply: false, recordInTimeline: late };
}

export function canMove(from: MessageStatus, to: MessageStatus): boolean {
  return NEXT[from].includes(to);
}

export function rank(status: MessageStatus): number {
  return RANK[status];
}
