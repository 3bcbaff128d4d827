// Resolved API keys, kept per process so that an API request does not pay a database round trip
// to learn who is calling. What a key resolves to depends on four tables (the key, its issuer's
// membership, the workspace's plan, the plan itself); triggers on them (migration
// 1732240500000-auth-changes) NOTIFY `svc_auth_changed` whenever one of them changes in a way that
// matters, and every process LISTENs (server/db/listener.ts) and empties its cache on each
// notification. A process's own changes also empty its cache as soon as they commit
// (invalidate()), so that a revoked key is refused by the very next request, and another
// process's changes take effect as soon as their notification arrives (milliseconds).
//
// The cache is only used while the LISTEN connection is up: when it drops, the cache is emptied
// and bypassed until it is back. Entries also expire after a minute, and a lookup that raced an
// invalidation is not stored (the generation check). Only keys that resolved are cached; an
// unknown key always reaches the database.
import type { DatabaseListener } from "../db/listener.js";
import type { ApiKeyPrincipal } from "../http/principal.js";

export const AUTH_CHANGED_CHANNEL = "svc_auth_changed";

const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

export class ApiKeyCache {
  private readonly entries = new Map<string, { principal: ApiKeyPrincipal; until: number }>();
  private generation = 0;

  /** `listener` null disables the cache. */
  constructor(private readonly listener: DatabaseListener | null) {
    listener?.on(AUTH_CHANGED_CHANNEL, () => this.invalidate());
    listener?.onDown(() => this.invalidate());
  }

  private get listening(): boolean {
    return this.listener?.up ?? false;
  }

  /** Pass the result to set(): an entry read before an invalidation is not stored after it. */
  generationNow(): number {
    return this.generation;
  }

  get(digest: string): ApiKeyPrincipal | undefined {
    if (!this.listening) return undefined;
    const entry = this.entries.get(digest);
    if (!entry) return undefined;
    if (entry.until <= Date.now()) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry.principal;
  }

  set(digest: string, principal: ApiKeyPrincipal, generation: number): void {
    if (!this.listening || generation !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest, { principal, until: Date.now() + TTL_MS });
  }

  /** Forgets every entry; call after committing a change to keys, members, workspaces or plans. */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }
}
