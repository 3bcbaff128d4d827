// The claim / idle / wake loop shared by the pollers that drain a table (dispatch queue, sandbox
// callbacks, event fan-out, webhook deliveries, the brokers' event sinks). Each turn runs `tick`,
// which does a batch of work and answers how much; after a batch that was not full the loop waits `idleMs` before the next
// turn, unless `wake()` ends the wait early (this process just made work). A full batch is
// followed at once by the next, since more is likely waiting. Failed turns back off (doubling up
// to MAX_BACKOFF_MS) so that an outage is not hammered, and the loop resumes by itself after it.
// A loop `notifiedBy` a channel is woken by every NOTIFY on it (work committed by any process):
// while the LISTEN connection is up its poll is only the fallback (NOTIFIED_IDLE_MS), and while
// it is down it polls every `idleMs`. A
// notified loop whose rows fall due later than they are written (a retry's backoff, a report's
// delay) says when with `dueIn`: after a turn that found nothing it sleeps until then.
import { backoffMs } from "./backoff.js";
import { isDatabaseUnavailable, unavailableReason } from "./db/availability.js";
import type { DatabaseListener } from "./db/listener.js";
import type { Logger } from "./logger.js";

/** Longest wait between failed turns: the loop is back within this long after the database is. */
export const MAX_BACKOFF_MS = 2_000;
/**
 * The poll of a loop woken by NOTIFY while LISTEN is up: a notification is not lost while the
 * connection lives (a lost connection wakes the loop), so this only bounds how late work whose
 * lease ran out (its holder died) is taken up again.
 */
export const NOTIFIED_IDLE_MS = 10_000;

export interface PollingLoopOptions {
  /** Does one batch of work; answers how much it did. */
  tick: () => Promise<number>;
  /** Whether a tick that did `n` was a full batch, so the next one starts without waiting. */
  full: (n: number) => boolean;
  /** How long to wait after a batch that was not full (without notifications). */
  idleMs: number;
  /** Asked after each batch that was not full: wait no longer than this (e.g. until the next due time). */
  idleFor?: () => number;
  /** Woken by every NOTIFY on `channel`; polls only as a fallback while the listener is up. */
  notifiedBy?: { listener: DatabaseListener; channel: string };
  /**
   * With `notifiedBy`: asked after a turn that found nothing, while notifications arrive: how many
   * milliseconds until the earliest row falls due (null: none). The loop sleeps until then (at
   * least `idleMs`, at most the fallback); after a turn that did work it looks again in `idleMs`.
   */
  dueIn?: () => Promise<number | null>;
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

  constructor(private readonly options: PollingLoopOptions) {
    const notifiedBy = options.notifiedBy;
    notifiedBy?.listener.on(notifiedBy.channel, () => this.wake());
    // Notifications may have been missed while it was down, and the loop polls quickly from now on.
    notifiedBy?.listener.onDown(() => this.wake());
  }

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
      let wait = 0;
      try {
        done = await tick();
        if (!full(done)) wait = await this.waitAfter(done);
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
      else if (!full(done) && !this.woken && this.isRunning) await this.idle(wait);
    }
  }

  /** How long to idle after a turn that did `done`, not a full batch. */
  private async waitAfter(done: number): Promise<number> {
    const { idleMs, dueIn } = this.options;
    const wait = Math.min(this.pollMs(), this.options.idleFor?.() ?? Infinity);
    if (!dueIn || !this.options.notifiedBy?.listener.up) return wait;
    if (done > 0) return Math.min(wait, idleMs);
    const due = await dueIn();
    return due === null ? wait : Math.min(wait, Math.max(idleMs, due));
  }

  private pollMs(): number {
    return this.options.notifiedBy?.listener.up ? NOTIFIED_IDLE_MS : this.options.idleMs;
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
