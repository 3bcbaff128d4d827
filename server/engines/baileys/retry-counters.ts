// The library counts, per message, how often a recipient's device asked for it again (a retry
// receipt) and gives up after a limit. Its default counter lives inside the socket, so every
// reconnect started the count over and a device that cannot decrypt kept asking forever (the
// library's own example keeps the counter outside the socket for that reason). This one belongs
// to the session, which outlives its sockets: entries expire after an hour, at most 10,000.
import type { CacheStore } from "@whiskeysockets/baileys";

export const RETRY_COUNTER_TTL_MS = 60 * 60_000;
export const RETRY_COUNTER_MAX = 10_000;

export class RetryCounters implements CacheStore {
  private readonly entries = new Map<string, { value: unknown; expires: number }>();

  get<T>(key: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value as T;
  }

  set<T>(key: string, value: T): void {
    this.entries.delete(key);
    if (this.entries.size >= RETRY_COUNTER_MAX) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, expires: Date.now() + RETRY_COUNTER_TTL_MS });
  }

  del(key: string): void {
    this.entries.delete(key);
  }

  flushAll(): void {
    this.entries.clear();
  }
}
