// One LISTEN connection per process, for every channel the gateway listens on: the auth cache's
// (svc_auth_changed) and the work that other processes commit (svc_jobs for the job outbox,
// svc_events for the webhook fan-out). NOTIFY is delivered on commit, so a handler runs only for
// committed work, in this process and in every other. The connection reconnects by itself with
// the backoff of server/backoff.ts; while it is down, `up` is false and the users fall back on
// what they do without it (the auth cache is bypassed, the loops poll). On the embedded database
// too: its server hands each notification to the clients listening on its channel (embedded.ts).
import pg from "pg";
import { backoffMs } from "../backoff.js";
import type { Logger } from "../logger.js";

/** Reconnection backs off from 1 s to 10 s while the database stays away. */
const RECONNECT_MS = 1_000;
const RECONNECT_MAX_MS = 10_000;

export class DatabaseListener {
  private readonly handlers = new Map<string, (() => void)[]>();
  private readonly downHandlers: (() => void)[] = [];
  private client: pg.Client | null = null;
  private listening = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  /** Failed reconnections in a row: sets the backoff, and only the first is logged. */
  private failures = 0;

  constructor(
    /** The database to LISTEN on; null: never listens (tests of what runs without it). */
    private readonly databaseUrl: string | null,
    private readonly logger: Logger,
  ) {}

  /** Runs `handler` on every notification of `channel`; a channel first named after start() is listened to from then on. */
  on(channel: string, handler: () => void): void {
    const known = this.handlers.has(channel);
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
    // A connection still being set up listens to every channel named by then, this one included;
    // one that fails is replaced by a new one, which does the same.
    if (!known && this.listening) this.client?.query(`LISTEN ${channel}`).catch(() => undefined);
  }

  /** Runs `handler` whenever the connection is lost (notifications may have been missed). */
  onDown(handler: () => void): void {
    this.downHandlers.push(handler);
  }

  /** Whether notifications arrive now. */
  get up(): boolean {
    return this.listening;
  }

  async start(): Promise<void> {
    if (this.databaseUrl) await this.reconnect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.down();
    if (this.retry) clearTimeout(this.retry);
    await this.client?.end().catch(() => undefined);
  }

  private down(): void {
    this.listening = false;
    for (const handler of this.downHandlers) handler();
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl!, application_name: "svc-gateway listener" });
    client.on("notification", (n) => {
      for (const handler of this.handlers.get(n.channel) ?? []) handler();
    });
    // Without this listener the connection's error would end the process; "end" follows and reconnects.
    client.on("error", (err) => {
      if (this.failures === 0) this.logger.warn({ err }, "LISTEN connection failed; reconnecting");
    });
    client.on("end", () => {
      this.down();
      this.scheduleReconnect();
    });
    this.client = client;
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
    if (!this.stopped) this.listening = true;
    if (this.failures > 0) this.logger.info({ failed_attempts: this.failures }, "LISTEN connection is back");
    this.failures = 0;
  }

  private async reconnect(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.listen();
    } catch (err) {
      if (this.failures === 0) this.logger.warn({ err }, "cannot LISTEN; retrying");
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
