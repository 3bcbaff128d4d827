// Work a process puts first. While it fires schedules that fell due together, the process's
// dispatcher waits before its next claim (at most a while at a time, so hand-offs never stop for
// long): a fire is the moment an occurrence is recorded (its lateness), and on a busy machine
// firing and handing off side by side made every fire wait on the other's writes. The messages a
// burst queues are handed off right after it, at their connections' pace (docs/decisions.md,
// "Schedules fired first, handed off after").
import { setTimeout as sleep } from "node:timers/promises";

export class Foreground {
  private running = 0;
  private done: { promise: Promise<void>; resolve: () => void } | null = null;

  /** Runs `work` as foreground work: waits in `settled` last until it (and any other) has ended. */
  async during<T>(work: () => Promise<T>): Promise<T> {
    this.running++;
    try {
      return await work();
    } finally {
      if (--this.running === 0) {
        this.done?.resolve();
        this.done = null;
      }
    }
  }

  /** Resolves at once when no foreground work runs; else once none does, after `maxMs`, or when `signal` aborts. */
  async settled(maxMs: number, signal?: AbortSignal): Promise<void> {
    if (this.running === 0 || signal?.aborted) return;
    if (!this.done) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.done = { promise, resolve };
    }
    const wait = new AbortController();
    const stop = () => wait.abort();
    signal?.addEventListener("abort", stop, { once: true });
    try {
      await Promise.race([this.done.promise, sleep(maxMs, undefined, { signal: wait.signal }).catch(() => undefined)]);
    } finally {
      wait.abort();
      signal?.removeEventListener("abort", stop);
    }
  }
}
