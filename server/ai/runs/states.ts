// The AI run lifecycle (docs/ai.md, "AI runs"), as data. A run is `pending` from its claim,
// `calling` once its worst case is reserved and the vendor may bill it, and `done` with an
// outcome. OUTCOMES says which outcomes end a run from each open state; RESUME what a process does
// with a run whose holder died (its lease passed). The store (store.ts) writes every move; the
// runner (runner.ts) decides which. The statements match these names as literals.
import { AiRunOutcome } from "../../../contract/index.js";
import { AI_VENDOR_TIMEOUT_MAX_S } from "../../config.js";

export type RunState = "pending" | "calling" | "done";
export type OpenState = Exclude<RunState, "done">;

/** Allowed moves: a run is never reopened. */
export const NEXT: Record<RunState, readonly RunState[]> = {
  pending: ["calling", "done"],
  calling: ["done"],
  done: [],
};

/**
 * The outcomes that end a run from each open state: the refusals before the vendor is called,
 * and what a vendor call (or its interruption) ends in.
 */
export const OUTCOMES = {
  pending: ["credential_missing", "human_active", "rate_limited", "cost_limit_reached"],
  calling: ["drafted", "replied", "vendor_error"],
} as const satisfies Record<OpenState, readonly AiRunOutcome[]>;

/** What the reservation refuses a run with: the ceilings checked before the vendor may bill. */
export type Refusal = Extract<(typeof OUTCOMES.pending)[number], "rate_limited" | "cost_limit_reached">;

// Every outcome of the contract ends a run from exactly one open state, and each open state may end.
for (const outcome of AiRunOutcome.options) {
  const from = (Object.keys(OUTCOMES) as OpenState[]).filter((s) => (OUTCOMES[s] as readonly string[]).includes(outcome));
  if (from.length !== 1) throw new Error(`AI run outcome ${outcome}: ends a run from ${from.length} states, not one`);
}
for (const s of Object.keys(OUTCOMES) as OpenState[]) if (!NEXT[s].includes("done")) throw new Error(`AI run state ${s} cannot end`);

/**
 * A run taken over after its lease passed: a `pending` one is worked from the start; a `calling`
 * one (the vendor may have billed it) is only finished: `replied` when its reply exists, else
 * `vendor_error` / `interrupted` with its worst case kept as its cost.
 */
export const RESUME: Record<OpenState, "from_start" | "finish_interrupted"> = {
  pending: "from_start",
  calling: "finish_interrupted",
};

/** How long a contact written to from the linked phone is left to the human. */
export const HUMAN_ACTIVE_MINUTES = 30;
/** Runs per minute and connection that may reach the vendor. */
export const AI_RUNS_PER_MINUTE = 30;
/**
 * How long a process holds a run it works on. Longer than the slowest vendor call (its one time
 * bound, AI_VENDOR_TIMEOUT_S, at most AI_VENDOR_TIMEOUT_MAX_S) plus a send; past it, another
 * process may resume the run.
 */
export const AI_RUN_LEASE_MS = 180_000;
if (AI_RUN_LEASE_MS < (AI_VENDOR_TIMEOUT_MAX_S + 30) * 1000) throw new Error("AI_RUN_LEASE_MS must outlast the longest vendor call and a send");
