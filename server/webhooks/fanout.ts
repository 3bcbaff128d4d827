// Fan-out from the event outbox: every event row not yet fanned out becomes one delivery per
// matching endpoint (same workspace, event type subscribed, and, for an endpoint pinned to a
// connection, the event's connection_id equal to the pinned one), and is then marked fanned out.
// The match is one SQL function (migration 1732261700000-events-unmatched), which also writes an
// event no endpoint matches fanned out already: the fan-out never sees it.
// A batch is claimed with FOR UPDATE SKIP LOCKED and handled in one transaction, so several
// processes share the work and a crash half-way leaves the batch to be fanned out again; the
// unique (endpoint_id, event_id) makes that second pass add nothing twice. Every statement that
// records an event wakes the fan-out of every process at once (NOTIFY svc_events on commit); the
// poll is the fallback, and the only way on the embedded database.
import type { DataSource } from "typeorm";
import { rows } from "../db/rows.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { DatabaseListener } from "../db/listener.js";
import { PollingLoop } from "../polling-loop.js";

const BATCH = 500;
/** Every insert into events NOTIFYs this channel on commit (migration 1732261400000-job-outbox). */
export const EVENTS_CHANNEL = "svc_events";
const IDLE_POLL_MS = 200;

export interface FanoutResult {
  events: number;
  deliveries: number;
}

export class WebhookFanout {
  private readonly loop: PollingLoop;

  constructor(
    private readonly db: DataSource,
    logger: Logger,
    /** Called after a batch that created deliveries committed (wakes this process's deliverer). */
    onDeliveries: () => void,
    options: { batch?: number; idlePollMs?: number; listener?: DatabaseListener } = {},
  ) {
    const batch = options.batch ?? BATCH;
    this.loop = new PollingLoop({
      tick: async () => {
        const result = await this.fanOutBatch(batch);
        if (result.deliveries > 0) onDeliveries();
        return result.events;
      },
      full: (n) => n >= batch,
      idleMs: options.idlePollMs ?? IDLE_POLL_MS,
      // Every statement that records an event NOTIFYs svc_events on commit.
      ...(options.listener ? { notifiedBy: { listener: options.listener, channel: EVENTS_CHANNEL } } : {}),
      logger,
      errorMessage: "webhook fan-out failed",
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Events were committed: fan them out now rather than at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /** Fans out up to `limit` pending events, oldest first, in one transaction. */
  async fanOutBatch(limit = BATCH): Promise<FanoutResult> {
    // One cheap look on the partial index first: an idle poll costs a query, not a transaction.
    const [pending] = await rows(this.db, `SELECT 1 FROM events WHERE fanned_out_at IS NULL LIMIT 1`);
    if (!pending) return { events: 0, deliveries: 0 };
    return this.db.transaction(async (em) => {
      const events = await rows<{ id: string }>(
        em,
        `SELECT id FROM events WHERE fanned_out_at IS NULL ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      if (events.length === 0) return { events: 0, deliveries: 0 };
      const ids = events.map((e) => e.id);
      const matches = await rows<{ event_id: string; endpoint_id: string; workspace_id: string; type: string }>(
        em,
        `SELECT ev.id AS event_id, e.id AS endpoint_id, ev.workspace_id, ev.type
           FROM events ev
           JOIN webhook_endpoints e ON webhook_endpoint_matches(e, ev.workspace_id, ev.type, ev.connection_id)
          WHERE ev.id = ANY($1::text[])
          ORDER BY ev.created_at, ev.id`,
        [ids],
      );
      let deliveries = 0;
      if (matches.length > 0) {
        const inserted = await rows<{ id: string }>(
          em,
          `INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_at)
           SELECT id, endpoint_id, workspace_id, event_id, event_type, 'pending', now()
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(id, endpoint_id, workspace_id, event_id, event_type)
           ON CONFLICT (endpoint_id, event_id) DO NOTHING
           RETURNING id`,
          [matches.map(() => newId("del")), matches.map((m) => m.endpoint_id), matches.map((m) => m.workspace_id), matches.map((m) => m.event_id), matches.map((m) => m.type)],
        );
        deliveries = inserted.length;
      }
      await em.query(`UPDATE events SET fanned_out_at = now() WHERE id = ANY($1::text[])`, [ids]);
      return { events: events.length, deliveries };
    });
  }
}
