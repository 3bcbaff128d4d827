// The connection lifecycle (docs/engines.md), as data. Every state change of a connection, whether a
// user asked for it or the engine reported it, goes through `nextState()`.
import type { WebhookEvent } from "../../contract/index.js";
import type { Connection, StoredConnectionState } from "./entities.js";

/** What can happen to a connection: user operations, and the engine's reports (link, unlink). */
export type ConnectionAction = "pair" | "link" | "unlink" | "suspend" | "resume" | "delete" | "move";

type Move = StoredConnectionState | ((linked: boolean) => StoredConnectionState);

// A missing entry means the action is refused from that state (409 for user operations).
const MOVES: Record<ConnectionAction, Partial<Record<StoredConnectionState, Move>>> = {
  pair: { created: "pairing", pairing: "pairing", disconnected: "pairing" },
  // The engine reports what the device did; a suspended connection stays suspended (only resume
  // leaves it) but remembers the link, which decides where resume returns to.
  link: { created: "connected", pairing: "connected", connected: "connected", disconnected: "connected", suspended: "suspended" },
  unlink: { created: "created", pairing: "disconnected", connected: "disconnected", disconnected: "disconnected", suspended: "suspended" },
  suspend: { created: "suspended", pairing: "suspended", connected: "suspended", disconnected: "suspended" },
  resume: { suspended: (linked) => (linked ? "connected" : "disconnected") },
  // To another engine, only while no device is linked; an open grant is withdrawn with the old engine's session.
  move: { created: "created", pairing: "created", disconnected: "disconnected" },
  delete: { created: "deleted", pairing: "deleted", connected: "deleted", disconnected: "deleted", suspended: "deleted" },
};

/** The state after `action`, or null when the action is not allowed from `from`. */
export function nextState(action: ConnectionAction, from: StoredConnectionState, linked: boolean): StoredConnectionState | null {
  const move = MOVES[action][from];
  if (move === undefined) return null;
  return typeof move === "function" ? move(linked) : move;
}

/** States the user may move a connection out of with `action` (for error messages). */
export function allowedFrom(action: ConnectionAction): StoredConnectionState[] {
  return Object.keys(MOVES[action]) as StoredConnectionState[];
}

const EVENTS: Partial<Record<StoredConnectionState, WebhookEvent>> = {
  connected: "connection.connected",
  disconnected: "connection.disconnected",
  suspended: "connection.suspended",
};

/** The webhook event of entering `to` from `from`, if that change is one subscribers can follow. */
export function eventForChange(from: StoredConnectionState, to: StoredConnectionState): WebhookEvent | null {
  return from === to ? null : (EVENTS[to] ?? null);
}

/** The `detail` of a connection whose account the network restricted (docs/engines.md). */
export const ACCOUNT_RESTRICTED = "account_restricted";

/**
 * Whether a network restriction still pauses the connection's sending: reported and not lifted,
 * and not past the end the network gave. The dispatcher's claim says the same in SQL
 * (`restrictionHoldsSql`).
 */
export function restrictionHolds(c: Pick<Connection, "restricted" | "restrictedUntil">, now = new Date()): boolean {
  return c.restricted && (c.restrictedUntil === null || c.restrictedUntil > now);
}

export function restrictionHoldsSql(alias: string): string {
  return `(${alias}.restricted AND (${alias}.restricted_until IS NULL OR ${alias}.restricted_until > now()))`;
}
