// The claim / idle / wake loop shared by the pollers that drain a table (dispatch queue, sandbox
// callbacks, event fan-out, webhook deliveries, the brokers' event sinks). Each turn runs `tick`,
// which does a batch of work and answers how much; after a batch that was not full the loop waits `idleMs` before the next
// turn, unless `wake()` ends the wait early (this process just made work). A full batch is
// followed at once by the next, since more is likely waiting. Failed turns back off (doubling up
// to MAX_BACKOFF_MS) so that an outage is not hammered, and the loop resumes by itself after it.
import { backoffMs } from "./backoff.js";
import { isDatabaseUnavailable, unavailableReason } from "./db/availability.js";
import type { Logger } from "./logger.js";

/** Longest wait between failed turns: the loop is back within this long after the database is. */
export const MAX_BACKOFF_MS = 2_000;

export interface PollingLoopOptions {
  /** Does one batch of work; answers how much it did. */
  tick: () => Promise<number>;
  /** Whether a tick that did `n` was a full batch, so the next one starts without waiting. */
  full: (n: number) => boolean;
  /** How long to wait after a batch that was not full. */
  idleMs: number;
  logger: Logger;
  /** Logged with the error of a failed tick (the loop then idles and goes on). */
  errorMessage: string;
  /** Longest wait between failed turns; default MAX_BACKOFF_MS. */
  maxBackoffMs?: number;
  /** Errors that mean a dependency is away (logged once when an outage starts); default: the database's. */
  outage?: { is: (err: unknown) => boolean; reason: (err: unknown) => string; what: string };
  /** Called with the error of every failed tick. */
  onFailure?: (err: unknown) => void;
}

const DATABASE_OUTAGE = { is: isDatabaseUnavailable, reason: unavailableReason, what: "database" };

export class PollingLoop {
  private isRunning = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  /** wake() was called while a tick ran: the next turn starts without waiting. */
  private woken = false;

  constructor(private readonly options: PollingLoopOptions) {}

  /** False once stop() was called: a tick in progress can hand back what it has not started. */
  get running(): boolean {
    return this.isRunning;
  }

  start(): void {
    if (this.isRunning) return;
    this.isRunning = true;
    this.loop = this.run();
  }

  /** Ends the idle wait and returns once the tick in progress (if any) has finished. */
  async stop(): Promise<void> {
    this.isRunning = false;
    this.wakeUp?.();
    await this.loop;
  }

  /** Ends the current idle wait at once; called while a tick runs, the next turn follows it at once. */
  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  private async run(): Promise<void> {
    const { tick, full, logger, errorMessage, idleMs } = this.options;
    const outage = this.options.outage ?? DATABASE_OUTAGE;
    const maxBackoffMs = this.options.maxBackoffMs ?? MAX_BACKOFF_MS;
    let failures = 0;
    while (this.isRunning) {
      this.woken = false;
      let done = 0;
      try {
        done = await tick();
        if (failures > 0) logger.info({ failed_turns: failures }, `${errorMessage}: recovered`);
        failures = 0;
      } catch (err) {
        failures++;
        this.options.onFailure?.(err);
        // Once stopping, a tick may fail because the shutdown closes what it uses: not worth a log
        // line. An outage is logged once when it starts, not on every turn it lasts.
        if (!this.isRunning) break;
        if (!outage.is(err)) logger.error({ err }, errorMessage);
        else if (failures === 1) logger.warn({ reason: outage.reason(err) }, `${errorMessage}: ${outage.what} unavailable; backing off until it is back`);
      }
      if (failures > 0) await this.idle(Math.max(idleMs, backoffMs(failures, idleMs, maxBackoffMs)));
      else if (!full(done) && !this.woken && this.isRunning) await this.idle(idleMs);
    }
  }

  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }
}
