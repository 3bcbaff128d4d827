// Resolved API keys, kept per process so that an API request does not pay a database round trip
// to learn who is calling. What a key resolves to depends on four tables (the key, its issuer's
// membership, the workspace's plan, the plan itself); triggers on them (migration
// 1732240500000-auth-changes) NOTIFY `svc_auth_changed` whenever one of them changes in a way that
// matters, and every process LISTENs on a connection of its own and empties its cache on each
// notification. A process's own changes also empty its cache as soon as they commit
// (invalidate()), so that a revoked key is refused by the very next request, and another
// process's changes take effect as soon as their notification arrives (milliseconds).
//
// The cache is only used while the LISTEN connection is up: when it drops, the cache is emptied
// and bypassed until it is back. Entries also expire after a minute, and a lookup that raced an
// invalidation is not stored (the generation check). Only keys that resolved are cached; an
// unknown key always reaches the database. Not used on the embedded database (no LISTEN there).
import pg from "pg";
import { backoffMs } from "../backoff.js";
import type { ApiKeyPrincipal } from "../http/principal.js";
import type { Logger } from "../logger.js";

export const AUTH_CHANGED_CHANNEL = "svc_auth_changed";

const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;
/** Reconnection backs off from 1 s to 10 s while the database stays away. */
const RECONNECT_MS = 1_000;
const RECONNECT_MAX_MS = 10_000;

export class ApiKeyCache {
  private readonly entries = new Map<string, { principal: ApiKeyPrincipal; until: number }>();
  private generation = 0;
  private client: pg.Client | null = null;
  private listening = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  /** Failed reconnections in a row: sets the backoff, and only the first is logged. */
  private failures = 0;

  constructor(
    /** The database to LISTEN on; null disables the cache. */
    private readonly databaseUrl: string | null,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    if (this.databaseUrl) await this.reconnect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    if (this.retry) clearTimeout(this.retry);
    this.invalidate();
    await this.client?.end().catch(() => undefined);
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

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl!, application_name: "svc-gateway auth cache" });
    client.on("notification", () => this.invalidate());
    // Without this listener the connection's error would end the process; "end" follows and reconnects.
    client.on("error", (err) => {
      if (this.failures === 0) this.logger.warn({ err }, "auth cache: LISTEN connection failed; cache bypassed until it is back");
    });
    client.on("end", () => {
      this.listening = false;
      this.invalidate();
      this.scheduleReconnect();
    });
    this.client = client;
    await client.connect();
    await client.query(`LISTEN ${AUTH_CHANGED_CHANNEL}`);
    if (!this.stopped) this.listening = true;
    if (this.failures > 0) this.logger.info({ failed_attempts: this.failures }, "auth cache: LISTEN connection is back; cache in use");
    this.failures = 0;
  }

  private async reconnect(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.listen();
    } catch (err) {
      if (this.failures === 0) this.logger.warn({ err }, "auth cache: cannot LISTEN; cache bypassed, retrying");
      this.failures++;
      await this.client?.end().catch(() => undefined);
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.reconnect();
    }, backoffMs(this.failures, RECONNECT_MS, RECONNECT_MAX_MS));
    this.retry.unref();
  }
}
