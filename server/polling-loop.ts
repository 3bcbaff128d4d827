// The claim / idle / wake loop shared by the pollers that drain a table (dispatch queue, sandbox
// callbacks, event fan-out, webhook deliveries). Each turn runs `tick`, which does a batch of work
// and answers how much; after a batch that was not full the loop waits `idleMs` before the next
// turn, unless `wake()` ends the wait early (this process just made work). A full batch is
// followed at once by the next, since more is likely waiting.
import type { Logger } from "./logger.js";

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
}

export class PollingLoop {
  private isRunning = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;

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

  /** Ends the current idle wait at once; does nothing while a tick runs. */
  wake(): void {
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    const { tick, full, logger, errorMessage } = this.options;
    while (this.isRunning) {
      let done = 0;
      try {
        done = await tick();
      } catch (err) {
        // Once stopping, a tick may fail because the shutdown closes what it uses: not worth a log line.
        if (this.isRunning) logger.error({ err }, errorMessage);
      }
      if (!full(done) && this.isRunning) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.options.idleMs);
      this.wakeUp = done;
    });
  }
}
