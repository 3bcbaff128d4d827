// The message status lifecycle of product.md, as data. Every status change in the project goes
// through `transition()`; nothing else decides whether a move is allowed.
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
  scheduled: ["accepted", "queued", "failed", "canceled"],
  accepted: ["queued", "submitting", "failed", "canceled"],
  queued: ["submitting", "failed", "canceled"],
  // a crashed hand-off is retried: submitting may go back to queued
  submitting: ["queued", "submitted", "sent", "delivered", "read", "failed"],
  submitted: ["sent", "delivered", "read", "failed"],
  sent: ["delivered", "read", "failed"],
  delivered: ["read"],
  read: [],
  failed: [],
  canceled: [],
};

export const CANCELABLE: readonly MessageStatus[] = ["scheduled", "accepted", "queued"];
export const TERMINAL: readonly MessageStatus[] = ["read", "failed", "canceled"];

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
