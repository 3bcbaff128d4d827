// Firing schedules. The schedules table is the queue: any number of workers, on any number of
// processes, claim a batch of due active schedules with FOR UPDATE SKIP LOCKED and fire it in
// one short transaction. For each schedule that transaction
//   1. looks for the occurrence's run (schedule_id, occurrence_at) — the primary key is the
//      fire's idempotency key, so an occurrence that somehow comes round again is never sent
//      twice (the schedule's row lock keeps a concurrent fire out until this one commits);
//   2. writes the message through the message store (the same writes as a send, same
//      transaction), or a `failed` message with the reason the send rules give when it cannot be
//      sent now (plan without scheduling, connection not connected, monthly allowance used);
//   3. records the run with its message, advances occurrences / next_run_at / status with
//      advance() — once behind, it fires once and drops the backlog — and records schedule.fired
//      (and schedule.completed) in the outbox.
// A schedule's fire is therefore atomic: all of it commits or none. Batching is for throughput:
// the claim (with the runs already recorded, the connections, the plans and the month's usage)
// is one statement, the batch's messages another, the runs and the advance of the whole batch a
// third, and one commit serves the batch. A batch that fails is retried one schedule at a time,
// so one bad row only holds itself back. Every process fires: its own loop (ScheduleFiringLoop,
// below) wakes at the next due time and on NOTIFY svc_schedules, so the workers of all processes
// claim side by side (docs/decisions.md, "Work spread over processes"); the dispatcher picks the
// queued messages up once the run is over (server/foreground.ts).
import { hostname } from "node:os";
import type { DataSource, EntityManager } from "typeorm";
import { SendMessageBody, type Message as MessageView, type Recurrence, type ScheduleStatus } from "../../contract/index.js";
import { Connection, type StoredConnectionState } from "../connections/entities.js";
import { buildEvent, insertEvents } from "../events/record.js";
import type { DomainEvent } from "../events/entities.js";
import { isSharedSession } from "../db/prepared.js";
import { rows } from "../db/rows.js";
import type { DatabaseListener } from "../db/listener.js";
import type { Foreground } from "../foreground.js";
import type { Logger } from "../logger.js";
import { PollingLoop } from "../polling-loop.js";
import { acceptMany, type AcceptInput } from "../messages/store/accept.js";
import { refusalText, sendRefusal } from "../messages/store/send-rules.js";
import type { Schedule } from "./entities.js";
import { monthOutboundSql, usageShard } from "../workspace/usage.js";
import { advance, type Progress } from "./recurrence.js";
import { nextStatus, progressPatch, scheduleView } from "./service.js";

/**
 * Schedules claimed and fired per transaction: a worker starts at FIRST_FIRE_BATCH and doubles
 * while its batches come back full, up to FIRE_BATCH. A few due schedules are shared finely
 * between the processes; a burst pays one commit (and its WAL flush) per FIRE_BATCH. (10,000 due
 * at one instant over two processes: 25 a batch fired ~1,260 a second, 250 ~2,060; docs/performance.md.)
 */
export const FIRE_BATCH = 250;
const FIRST_FIRE_BATCH = 25;
/** The embedded database runs one transaction at a time: a batch there stays short, so requests wait little. */
const EMBEDDED_FIRE_BATCH = 25;

export type FireOutcome = "queued" | "failed" | "not_sent" | "duplicate";

export interface FireResult {
  scheduleId: string;
  occurrenceAt: Date;
  outcome: FireOutcome;
  messageId: string | null;
}

export interface FireDueOptions {
  /** Concurrent fire transactions (each holds one pooled connection). */
  workers?: number;
  /** Most schedules per transaction (a worker's first batch is smaller, see FIRE_BATCH). */
  batch?: number;
  /** Stop claiming after this long; what is left is for the next run. */
  budgetMs?: number;
  /** Checked between batches: true stops claiming (process shutting down). */
  shouldStop?: () => boolean;
}

interface Failure {
  code: string;
  message: string;
}

/** A claimed schedule with what its fire needs, read by the claiming statement. */
interface Claimed {
  schedule: Schedule;
  /** False when the occurrence already has a run: it is not sent again. */
  fresh: boolean;
  connection: Connection | null;
  plan: { name: string; scheduling: boolean; messagesPerMonth: number | null };
  /** Outbound messages of the workspace this UTC month, when the plan has an allowance. */
  usedThisMonth: number;
}

interface Fired {
  claimed: Claimed;
  counted: boolean;
  message: MessageView | null;
  failure: Failure | null;
}

export class ScheduleFiring {
  /** Recorded on each run, so an operator can see which process fired what. */
  private readonly firedBy = `${hostname()}:${process.pid}`;

  constructor(
    private readonly db: DataSource,
    private readonly logger: Logger,
  ) {}

  /**
   * Fires due schedules until none is left (or the budget is spent), `workers` transactions at a
   * time. Returns how many occurrences were handled.
   */
  async fireDue(options: FireDueOptions = {}): Promise<number> {
    const deadline = Date.now() + (options.budgetMs ?? 20_000);
    const most = Math.max(1, options.batch ?? FIRE_BATCH);
    // Schedules whose fire threw: left for the next run, skipped for the rest of this one.
    const skip = new Set<string>();
    let handled = 0;
    const worker = async (): Promise<void> => {
      let batch = Math.min(FIRST_FIRE_BATCH, most);
      while (Date.now() < deadline && !options.shouldStop?.()) {
        const fired = await this.fireIsolating(batch, skip);
        handled += fired;
        if (fired === 0) return;
        if (fired >= batch) batch = Math.min(2 * batch, most);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.workers ?? 1) }, worker));
    return handled;
  }

  /**
   * Claims up to `limit` due schedules not in `skip` and fires them in one transaction; `only`
   * restricts the claim to that one schedule. Returns what was fired (empty when nothing was due).
   */
  async fireBatch(limit = FIRE_BATCH, skip: Iterable<string> = [], only?: string, onClaim?: (ids: string[]) => void): Promise<FireResult[]> {
    return this.db.transaction(async (em) => {
      const now = new Date();
      const claimed = await this.claim(em, now, only === undefined ? limit : 1, [...skip], only ?? null);
      onClaim?.(claimed.map((c) => c.schedule.id));
      // Messages this batch writes per workspace, so the allowance holds within the batch too.
      const written = new Map<string, number>();
      const fired: Fired[] = [];
      const sends: { fired: Fired; input: AcceptInput }[] = [];
      for (const c of claimed) {
        if (!c.fresh) {
          this.logger.warn({ schedule_id: c.schedule.id, occurrence_at: c.schedule.nextRunAt }, "occurrence already fired; advancing without sending");
          fired.push({ claimed: c, counted: false, message: null, failure: null });
          continue;
        }
        const { fired: f, input } = this.prepare(c, written);
        fired.push(f);
        if (input) sends.push({ fired: f, input });
      }
      // One statement writes the batch's messages. It counts them on one usage shard, one row per
      // workspace taken in workspace order, so batches of one workspace run side by side without
      // deadlocking on usage rows.
      const views = await acceptMany(em, sends.map((s) => s.input), usageShard());
      sends.forEach((s, i) => (s.fired.message = views[i]!));
      if (fired.length) await this.finish(em, fired, now);
      return fired.map(result);
    });
  }

  /** One batch; when it fails, its schedules one by one, so that only a bad one is held back. */
  private async fireIsolating(limit: number, skip: Set<string>): Promise<number> {
    let ids: string[] = [];
    try {
      return (await this.fireBatch(limit, skip, undefined, (claimed) => (ids = claimed))).length;
    } catch (err) {
      if (!ids.length) throw err;
      let fired = 0;
      for (const id of ids) {
        try {
          fired += (await this.fireBatch(1, [], id)).length;
        } catch (single) {
          skip.add(id);
          this.logger.error({ err: single, schedule_id: id }, "schedule fire failed; retried on the next run");
        }
      }
      return fired;
    }
  }

  /**
   * The claim: due active schedules, locked (SKIP LOCKED: another worker's rows are passed over),
   * their run rows inserted (ON CONFLICT: an occurrence already run comes back not fresh), with
   * their live connection, their workspace's plan and its usage this month — one round trip.
   */
  private async claim(em: EntityManager, now: Date, limit: number, skip: string[], only: string | null): Promise<Claimed[]> {
    const raw = await rows<ClaimRow>(
      em,
      `WITH due AS (
         SELECT id, next_run_at FROM schedules
          WHERE status = 'active' AND next_run_at <= $1 AND id <> ALL($2::text[])
            AND ($4::text IS NULL OR id = $4)
          ORDER BY next_run_at
          LIMIT $3
          FOR UPDATE SKIP LOCKED
       )
       SELECT s.*, NOT EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = due.id AND r.occurrence_at = due.next_run_at) AS fresh,
              p.name AS plan_name, p.scheduling AS plan_scheduling, p.messages_per_month AS plan_messages_per_month,
              CASE WHEN p.messages_per_month IS NULL THEN 0 ELSE ${monthOutboundSql("s.workspace_id")} END AS used_this_month,
              c.id AS c_id, c.slug AS c_slug, c.name AS c_name, c.state AS c_state, c.linked AS c_linked, c.phone AS c_phone,
              c.transport AS c_transport, c.callback_nonce AS c_callback_nonce, c.callback_token_digest AS c_callback_token_digest,
              c.created_at AS c_created_at, c.updated_at AS c_updated_at
         FROM due
         JOIN schedules s ON s.id = due.id
         JOIN workspaces w ON w.id = s.workspace_id
         JOIN plans p ON p.id = w.plan_id
         LEFT JOIN connections c ON c.workspace_id = s.workspace_id AND c.slug = s.message->>'connection' AND c.deleted_at IS NULL
        ORDER BY due.next_run_at, s.id`,
      [now, skip, limit, only],
    );
    return raw.map(claimedFromRow);
  }

  /** The occurrence's message to write: queued, or failed with the reason it cannot be sent now. */
  private prepare(c: Claimed, written: Map<string, number>): { fired: Fired; input?: AcceptInput } {
    const body = SendMessageBody.safeParse(c.schedule.message);
    if (!body.success) {
      const failure = { code: "invalid_message", message: "The schedule's message is no longer a valid send request." };
      return { fired: { claimed: c, counted: true, message: null, failure } };
    }
    // Checked at the moment of sending, like a deferred send: the plan still includes scheduling,
    // the connection is connected, the monthly allowance has room (counting this batch's messages).
    const refusal = sendRefusal({
      slug: body.data.connection,
      connection: c.connection,
      plan: c.plan,
      used: c.usedThisMonth + (written.get(c.schedule.workspaceId) ?? 0),
      later: true,
      now: true,
    });
    const failure = refusal && { code: refusal.code, message: refusalText(refusal) };
    if (!c.connection) {
      // Nothing to attach a message to: the run and the event carry the reason.
      return { fired: { claimed: c, counted: true, message: null, failure } };
    }
    written.set(c.schedule.workspaceId, (written.get(c.schedule.workspaceId) ?? 0) + 1);
    const input = { workspaceId: c.schedule.workspaceId, connection: c.connection, body: body.data, scheduleId: c.schedule.id, ...(failure ? { failure } : {}) };
    return { fired: { claimed: c, counted: true, message: null, failure }, input };
  }

  /** Advances every fired schedule and writes its run and events: one statement for the batch. */
  private async finish(em: EntityManager, fired: Fired[], now: Date): Promise<void> {
    const schedules: Schedule[] = [];
    const events: DomainEvent[] = [];
    // Schedules of one batch often share their rule, zone and occurrence ("daily 09:00 Berlin").
    const progressOf = new Map<string, Progress>();
    for (const f of fired) {
      const s = f.claimed.schedule;
      const occurrenceAt = s.nextRunAt!;
      const occurrences = s.occurrences + (f.counted ? 1 : 0);
      const input = { rule: s.recurrence, timeZone: s.timezone, firedAt: occurrenceAt, now, endsAt: s.endsAt, maxOccurrences: s.maxOccurrences, occurrences };
      const key = JSON.stringify([input.rule, input.timeZone, occurrenceAt.getTime(), input.endsAt?.getTime(), input.maxOccurrences, occurrences]);
      let progress = progressOf.get(key);
      if (!progress) progressOf.set(key, (progress = advance(input)));
      const updated: Schedule = {
        ...s,
        ...progressPatch(progress),
        status: progress.completed ? nextStatus("complete", s.status)! : s.status,
        occurrences,
        lastRunAt: f.counted ? occurrenceAt : s.lastRunAt,
        updatedAt: now,
      };
      schedules.push(updated);
      const view = scheduleView(updated);
      const connection = f.claimed.connection ? { id: f.claimed.connection.id, slug: f.claimed.connection.slug } : null;
      if (f.counted) {
        const data = {
          schedule: view,
          occurrence_at: occurrenceAt.toISOString(),
          message_id: f.message?.id ?? null,
          message_status: f.message?.status ?? null,
          error: f.failure,
        };
        events.push(buildEvent({ workspaceId: s.workspaceId, type: "schedule.fired", connection, data }, now));
      }
      if (updated.status === "completed") {
        // A millisecond later, so that the outbox's (created_at, id) order puts it after the fire.
        events.push(buildEvent({ workspaceId: s.workspaceId, type: "schedule.completed", connection, data: { schedule: view } }, new Date(now.getTime() + 1)));
      }
    }
    const runs = fired.filter((f) => f.counted);
    const [written] = await rows<{ runs: number }>(
      em,
      `WITH s AS (
         UPDATE schedules t SET status = v.status, occurrences = v.occurrences, next_run_at = v.next_run_at, last_run_at = v.last_run_at, updated_at = $6
           FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::timestamptz[]) AS v(id, status, occurrences, next_run_at, last_run_at)
          WHERE t.id = v.id
       ), r AS (
         INSERT INTO schedule_runs (schedule_id, occurrence_at, message_id, error_code, fired_by)
         SELECT v.*, $17 FROM unnest($7::text[], $8::timestamptz[], $9::text[], $10::text[]) AS v(schedule_id, occurrence_at, message_id, error_code)
         ON CONFLICT DO NOTHING
         RETURNING 1
       ), e AS (
         ${insertEvents(`SELECT * FROM unnest($11::text[], $12::text[], $13::text[], $14::text[], $15::jsonb[], $16::timestamptz[])`)}
       )
       SELECT count(*)::int AS runs FROM r`,
      [
        schedules.map((s) => s.id),
        schedules.map((s) => s.status),
        schedules.map((s) => s.occurrences),
        schedules.map((s) => s.nextRunAt),
        schedules.map((s) => s.lastRunAt),
        now,
        runs.map((f) => f.claimed.schedule.id),
        runs.map((f) => f.claimed.schedule.nextRunAt),
        runs.map((f) => f.message?.id ?? null),
        runs.map((f) => f.failure?.code ?? null),
        events.map((e) => e.id),
        events.map((e) => e.workspaceId),
        events.map((e) => e.type),
        events.map((e) => e.connectionId),
        events.map((e) => JSON.stringify(e.payload)),
        events.map((e) => e.createdAt),
        this.firedBy,
      ],
    );
    // The claim saw no run row for these occurrences and holds their schedules' locks, so none can
    // exist; if one does, nothing of this batch commits and its schedules are fired one by one.
    if (written!.runs !== runs.length) throw new Error(`${runs.length - written!.runs} of the batch's occurrences were fired meanwhile`);
  }
}

/** Every statement that creates a schedule or moves its next run NOTIFYs this (migration 1732261700000). */
export const SCHEDULES_CHANNEL = "svc_schedules";
/** Concurrent fire transactions per process; the embedded database runs one transaction at a time. */
const WORKERS = 2;
/** A run stops claiming after this long, so that a stop is not held up; the next turn goes on. */
const RUN_BUDGET_MS = 10_000;
/**
 * Without notifications (the embedded database, or the LISTEN connection down) a schedule created
 * or resumed elsewhere is seen by this poll; with them the poll is only a fallback.
 */
const POLL_MS = 1_000;
/** A due schedule that no worker could fire (locked by another process, or failing) is looked at again this soon. */
const RETRY_MS = 1_000;

/**
 * One per process: sleeps until the earliest next_run_at of an active schedule (or a NOTIFY that
 * an earlier one may exist), then fires what is due with several workers. Every process wakes at
 * the same instant and claims with SKIP LOCKED, so a burst is shared by all of them.
 */
export class ScheduleFiringLoop {
  private readonly loop: PollingLoop;
  /** When the earliest active schedule is due, as last read; null: none. */
  private nextDueAt: number | null = null;

  constructor(
    private readonly db: DataSource,
    private readonly firing: ScheduleFiring,
    listener: DatabaseListener,
    logger: Logger,
    private readonly foreground: Foreground,
    private readonly workers = isSharedSession(db) ? 1 : WORKERS,
    private readonly batch = isSharedSession(db) ? EMBEDDED_FIRE_BATCH : FIRE_BATCH,
  ) {
    this.loop = new PollingLoop({
      tick: () => this.tick(),
      full: (n) => n > 0,
      idleMs: POLL_MS,
      idleFor: () => (this.nextDueAt === null ? Infinity : Math.max(0, this.nextDueAt - Date.now())),
      notifiedBy: { listener, channel: SCHEDULES_CHANNEL },
      logger,
      errorMessage: "schedule firing failed",
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Fires what is due, or reads when the next one is; answers how many occurrences were handled. */
  private async tick(): Promise<number> {
    const [row] = await rows<{ at: Date | null }>(this.db, `SELECT min(next_run_at) AS at FROM schedules WHERE status = 'active'`);
    const at = row?.at ? row.at.getTime() : null;
    if (at === null || at > Date.now()) {
      this.nextDueAt = at;
      return 0;
    }
    // Foreground work: this process's dispatcher claims nothing new while it runs (server/foreground.ts).
    const handled = await this.foreground.during(() =>
      this.firing.fireDue({ workers: this.workers, batch: this.batch, budgetMs: RUN_BUDGET_MS, shouldStop: () => !this.loop.running }),
    );
    if (handled === 0) this.nextDueAt = Date.now() + RETRY_MS;
    return handled;
  }
}

function result(f: Fired): FireResult {
  const outcome: FireOutcome = !f.counted ? "duplicate" : !f.message ? "not_sent" : f.failure ? "failed" : "queued";
  return { scheduleId: f.claimed.schedule.id, occurrenceAt: f.claimed.schedule.nextRunAt!, outcome, messageId: f.message?.id ?? null };
}

interface ClaimRow {
  id: string;
  workspace_id: string;
  name: string;
  status: ScheduleStatus;
  timezone: string;
  recurrence: Recurrence;
  message: Record<string, unknown>;
  starts_at: Date | null;
  ends_at: Date | null;
  max_occurrences: number | null;
  occurrences: number;
  next_run_at: Date | null;
  last_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
  fresh: boolean;
  plan_name: string;
  plan_scheduling: boolean;
  plan_messages_per_month: number | null;
  used_this_month: number;
  c_id: string | null;
  c_slug: string;
  c_name: string | null;
  c_state: StoredConnectionState;
  c_linked: boolean;
  c_phone: string | null;
  c_transport: string;
  c_callback_nonce: string;
  c_callback_token_digest: Buffer;
  c_created_at: Date;
  c_updated_at: Date;
}

function claimedFromRow(r: ClaimRow): Claimed {
  const schedule: Schedule = {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    status: r.status,
    timezone: r.timezone,
    recurrence: r.recurrence,
    message: r.message,
    startsAt: r.starts_at,
    endsAt: r.ends_at,
    maxOccurrences: r.max_occurrences,
    occurrences: r.occurrences,
    nextRunAt: r.next_run_at,
    lastRunAt: r.last_run_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  const connection = r.c_id
    ? Object.assign(new Connection(), {
        id: r.c_id,
        workspaceId: r.workspace_id,
        slug: r.c_slug,
        name: r.c_name,
        state: r.c_state,
        linked: r.c_linked,
        phone: r.c_phone,
        transport: r.c_transport,
        callbackNonce: r.c_callback_nonce,
        callbackTokenDigest: r.c_callback_token_digest,
        createdAt: r.c_created_at,
        updatedAt: r.c_updated_at,
        deletedAt: null,
      })
    : null;
  return {
    schedule,
    fresh: r.fresh,
    connection,
    plan: { name: r.plan_name, scheduling: r.plan_scheduling, messagesPerMonth: r.plan_messages_per_month },
    usedThisMonth: r.used_this_month,
  };
}
