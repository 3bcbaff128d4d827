// One broker sink: a loop that publishes the event log (server/events/log.ts) to one broker, in
// the log's order, from a position kept in `event_sinks`. A batch is read after the position,
// published, and only once the broker acknowledged every event of it is the position moved past
// it: a crash or a broker failure in between publishes the batch again (at least once; the same
// event id each time, which JetStream's duplicate window absorbs and RabbitMQ consumers
// deduplicate on). One process at a time publishes for a sink: it holds the sink's row's lease,
// renewed at every batch; another process takes over once the lease has run out.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { DataSource } from "typeorm";
import { isDatabaseUnavailable, unavailableReason } from "../../db/availability.js";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import { PollingLoop } from "../../polling-loop.js";
import { LOG_HORIZON, LOG_ORDER, afterPosition } from "../log.js";

/** One event as the brokers get it. */
export interface SinkEvent {
  /** The event id: `Nats-Msg-Id` and AMQP `message_id`. */
  id: string;
  /** NATS subject and AMQP routing key: `<prefix>.<workspace id>.<connection slug or _>.<type>`. */
  subject: string;
  /** The webhook payload, JSON. */
  payload: string;
  createdAt: Date;
}

export interface SinkPublisher {
  /** Publishes the events in order; resolves once the broker has acknowledged (persisted) every one. */
  publish(events: readonly SinkEvent[]): Promise<void>;
  close(): Promise<void>;
}

export interface SinkCounters {
  published(n: number): void;
  failed(): void;
}

export interface EventSinkOptions {
  /** `event_sinks.name`: the broker kind and the stream or exchange, e.g. `nats:SVC_EVENTS`. */
  name: string;
  subjectPrefix: string;
  db: DataSource;
  publisher: SinkPublisher;
  logger: Logger;
  counters: SinkCounters;
  batch?: number;
  idleMs?: number;
  leaseSeconds?: number;
}

const BATCH = 1_000;
const IDLE_MS = 100;
const LEASE_SECONDS = 30;
/** Longest wait between failed turns: publishing resumes within this long after the broker is back. */
const MAX_BACKOFF_MS = 5_000;

export class EventSink {
  private readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  private readonly loop: PollingLoop;
  private created = false;

  constructor(private readonly options: EventSinkOptions) {
    const batch = options.batch ?? BATCH;
    this.loop = new PollingLoop({
      tick: () => this.tick(),
      full: (n) => n >= batch,
      idleMs: options.idleMs ?? IDLE_MS,
      maxBackoffMs: MAX_BACKOFF_MS,
      logger: options.logger.child({ sink: options.name }),
      errorMessage: "event sink",
      outage: {
        is: (err) => err instanceof BrokerError || isDatabaseUnavailable(err),
        reason: (err) => (err instanceof BrokerError ? err.message : unavailableReason(err)),
        what: "broker or database",
      },
      onFailure: (err) => {
        if (err instanceof BrokerError) options.counters.failed();
      },
    });
  }

  get name(): string {
    return this.options.name;
  }

  start(): void {
    this.loop.start();
  }

  /** Publishes what was recorded now rather than after the idle wait. */
  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.options.publisher.close();
  }

  /**
   * Publishes one batch if this process holds (or can take) the sink's lease; answers how many
   * events it published. Throws `BrokerError` when the broker did not acknowledge the batch.
   */
  async tick(): Promise<number> {
    const { db, name } = this.options;
    const batch = this.options.batch ?? BATCH;
    const lease = this.options.leaseSeconds ?? LEASE_SECONDS;
    if (!this.created) {
      // A new sink starts at the end of the log: the events recorded from now on (docs/events.md).
      await db.query(`INSERT INTO event_sinks (name, tx, event_id) VALUES ($1, ${LOG_HORIZON} - 1, '') ON CONFLICT (name) DO NOTHING`, [name]);
      this.created = true;
    }
    const [held] = await rows<{ tx: string; event_id: string }>(
      db,
      `UPDATE event_sinks SET lease_owner = $2, lease_until = now() + make_interval(secs => $3)
        WHERE name = $1 AND (lease_owner = $2 OR lease_until IS NULL OR lease_until < now())
        RETURNING tx::text AS tx, event_id`,
      [name, this.owner, lease],
    );
    if (!held) return 0; // another process publishes for this sink
    const found = await rows<{ id: string; tx: string; workspace_id: string; type: string; slug: string | null; payload: string; created_at: Date }>(
      db,
      `SELECT id, tx::text AS tx, workspace_id, type, payload->>'connection' AS slug, payload::text AS payload, created_at
         FROM events WHERE ${afterPosition(1)} ORDER BY ${LOG_ORDER} LIMIT $3`,
      [held.tx, held.event_id, batch],
    );
    const last = found.at(-1);
    if (!last) return 0;
    const prefix = this.options.subjectPrefix;
    const events = found.map((e) => ({ id: e.id, subject: eventSubject(prefix, e.workspace_id, e.slug, e.type), payload: e.payload, createdAt: e.created_at }));
    try {
      await this.options.publisher.publish(events);
    } catch (err) {
      throw new BrokerError(err);
    }
    const moved = await rows(
      db,
      `UPDATE event_sinks SET tx = $3, event_id = $4, published = published + $5, lease_until = now() + make_interval(secs => $6), updated_at = now()
        WHERE name = $1 AND lease_owner = $2 RETURNING 1`,
      [name, this.owner, last.tx, last.id, found.length, lease],
    );
    // The lease ran out during the batch and another process took over: it publishes the batch
    // again (the same ids), and this process stands by.
    if (moved.length === 0) this.options.logger.warn({ sink: name }, "event sink: lease lost during a batch; another process publishes");
    this.options.counters.published(found.length);
    return found.length;
  }
}

/** The broker did not take a batch (down, slow, refused). */
export class BrokerError extends Error {
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/** `<prefix>.<workspace id>.<connection slug, or _ when the event has no connection>.<type>` (docs/events.md). */
export function eventSubject(prefix: string, workspaceId: string, slug: string | null, type: string): string {
  return `${prefix}.${workspaceId}.${slug ?? "_"}.${type}`;
}
