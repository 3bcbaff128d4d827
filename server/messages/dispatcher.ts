// Hand-off of accepted messages to their engine. Each process runs one dispatcher; they share the
// dispatch_queue outbox, claiming rows with FOR UPDATE SKIP LOCKED and a lock that expires, so a
// process that dies mid hand-off leaves its claims to another. The engine deduplicates on our
// message id, so a hand-off retried after a crash reaches the network once. Every statement that
// queues a message or moves its due time NOTIFYs svc_dispatch (migration 1732262100000), so an idle
// dispatcher sleeps until its next row is due rather than polling every IDLE_POLL_MS.
import { setTimeout as sleep } from "node:timers/promises";
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import { Connection, connectionFromRow } from "../connections/entities.js";
import { engineConnectionFor } from "../connections/service.js";
import { restrictionHoldsSql } from "../connections/states.js";
import { EngineError, type EngineRegistry, type Pace } from "../engines/engine.js";
import { backoffMs } from "../backoff.js";
import { isDatabaseUnavailable, retryWhileUnavailable } from "../db/availability.js";
import { prepared } from "../db/prepared.js";
import { rows } from "../db/rows.js";
import type { DatabaseListener } from "../db/listener.js";
import type { Foreground } from "../foreground.js";
import type { Logger } from "../logger.js";
import { PollingLoop } from "../polling-loop.js";
import { messageRef } from "./chat.js";
import { dropHandOffs, markSubmitting, recordFailed, recordRetry, recordSubmitted } from "./store/handoff.js";

/** Every statement that adds to dispatch_queue or moves a row's available_at NOTIFYs this. */
export const DISPATCH_CHANNEL = "svc_dispatch";
const BATCH = 200;
const IDLE_POLL_MS = 250;
/** Longest a claim waits for the process's foreground work (a burst of schedules firing) to end. */
const FOREGROUND_WAIT_MS = 5_000;
/** Transient failures are retried this many times, with exponential backoff, then fail. */
export const MAX_ATTEMPTS = 10;
const MAX_BACKOFF_MS = 5 * 60_000;
/**
 * Hand-offs of one connection go in batches of what its pace allows in this window (at most
 * HANDOFF_BATCH): at the default 10 a second that is one at a time, as a real number needs; at
 * a high rate (a sandbox, a load test) one round trip marks and one records many.
 */
const HANDOFF_WINDOW_MS = 100;
const HANDOFF_BATCH = 50;
/** Longest wait between hand-off attempts while the database is unavailable. */
const MAX_OUTAGE_BACKOFF_MS = 2_000;
/**
 * Turns a stopping dispatcher waits for the database to finish a hand-off in flight (~16 s in all:
 * 4 turns, ~4 s, ran out on the embedded database in CI, one backend shared with a busy process).
 */
const STOPPING_OUTAGE_TURNS = 10;

interface Claimed {
  message_id: string;
  connection_id: string;
  attempts: number;
  /** The connection's engine (null when the connection is gone): its pace applies. */
  transport: string | null;
}

/** Claimed messages of one connection, handed off one at a time at the connection's pace. */
interface Lane {
  queue: Claimed[];
  running: boolean;
  /** The connection's pace: milliseconds between two hand-offs, drawn in [minMs, maxMs]. */
  pace: Pace;
}

export class MessageDispatcher {
  private readonly loop: PollingLoop;
  private readonly lanes = new Map<string, Lane>();
  private readonly active = new Set<Promise<void>>();
  private readonly intervalMs: number;
  /** Connections the last claim left out because their lanes were full: a lane that drains wakes the loop. */
  private held = new Set<string>();
  /** Aborted by stop(): ends the lanes' pace waits; a new one at each start. */
  private stopping = new AbortController();

  constructor(
    private readonly db: DataSource,
    private readonly config: Config,
    private readonly engines: EngineRegistry,
    private readonly logger: Logger,
    listener?: DatabaseListener,
    private readonly foreground?: Foreground,
  ) {
    this.intervalMs = 1000 / config.dispatch.ratePerConnection;
    this.loop = new PollingLoop({
      tick: () => this.claimAndEnqueue(),
      full: (n) => n >= BATCH,
      idleMs: IDLE_POLL_MS,
      ...(listener && { notifiedBy: { listener, channel: DISPATCH_CHANNEL }, dueIn: () => this.dueIn() }),
      logger,
      errorMessage: "dispatcher claim failed",
    });
  }

  start(): void {
    if (this.stopping.signal.aborted) this.stopping = new AbortController();
    this.loop.start();
  }

  /**
   * Stops claiming, finishes the hand-offs in flight, and gives the claims not yet started back
   * at once (another process takes them up now, not when their lock expires); a lane waiting for
   * its pace stops waiting.
   */
  async stop(): Promise<void> {
    const stopped = this.loop.stop();
    this.stopping.abort();
    await stopped;
    await Promise.all(this.active);
  }

  /** A message was accepted by this process: look now rather than at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  private async claimAndEnqueue(): Promise<number> {
    await this.foreground?.settled(FOREGROUND_WAIT_MS, this.stopping.signal);
    const claimed = await this.claim();
    for (const c of claimed) this.enqueue(c);
    return claimed.length;
  }

  /** The pace of a connection on `transport`: its engine's, never faster than DISPATCH_RATE_PER_CONNECTION. */
  private paceOf(transport: string | null): Pace {
    const engine = transport ? this.engines.get(transport)?.pace : undefined;
    return { minMs: Math.max(this.intervalMs, engine?.minMs ?? 0), maxMs: Math.max(this.intervalMs, engine?.maxMs ?? 0) };
  }

  /** Never hold more claims for a connection than its pace can hand off well within the lock. */
  private laneLimit(lane: Lane): number {
    return Math.max(1, Math.floor((this.config.dispatch.lockSeconds * 1000) / 3 / lane.pace.maxMs));
  }

  private async claim(): Promise<Claimed[]> {
    const saturated = [...this.lanes].filter(([, l]) => l.queue.length >= this.laneLimit(l)).map(([id]) => id);
    this.held = new Set(saturated);
    // An UPDATE returns its rows in the table's physical order, not the order it chose them in:
    // the claims are sorted again, by acceptance (the time, then the id, which is monotonic within
    // a millisecond), so each connection's lane gets them in the order they were accepted.
    return prepared<Claimed>(
      this.db,
      "dispatch-claim",
      `WITH claimed AS (
         UPDATE dispatch_queue q
            SET locked_until = now() + ($1 || ' seconds')::interval, attempts = q.attempts + 1
          WHERE q.message_id IN (
                SELECT message_id FROM dispatch_queue
                 WHERE available_at <= now() AND (locked_until IS NULL OR locked_until < now())
                   AND connection_id <> ALL($3::text[])
                   -- An account the network restricted sends nothing: its messages stay queued.
                   AND NOT EXISTS (SELECT 1 FROM connections r WHERE r.id = dispatch_queue.connection_id AND ${restrictionHoldsSql("r")})
                 ORDER BY available_at, message_id
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED)
          RETURNING q.message_id, q.connection_id, q.attempts, q.available_at
       )
       SELECT claimed.message_id, claimed.connection_id, claimed.attempts, c.transport
         FROM claimed LEFT JOIN connections c ON c.id = claimed.connection_id
        ORDER BY claimed.available_at, claimed.message_id`,
      [String(this.config.dispatch.lockSeconds), BATCH, saturated],
    );
  }

  /**
   * Milliseconds until the earliest row another claim could take falls due: its backoff over, its
   * lock expired, its connection's restriction lifted (null: none). Held lanes wake the loop themselves.
   */
  private async dueIn(): Promise<number | null> {
    const [row] = await rows<{ ms: number | null }>(
      this.db,
      `SELECT (EXTRACT(EPOCH FROM min(GREATEST(q.available_at, q.locked_until, CASE WHEN r.restricted THEN r.restricted_until END)) - now()) * 1000)::float8 AS ms
         FROM dispatch_queue q LEFT JOIN connections r ON r.id = q.connection_id
        WHERE q.connection_id <> ALL($1::text[]) AND NOT (coalesce(r.restricted, false) AND r.restricted_until IS NULL)`,
      [[...this.held]],
    );
    return row?.ms ?? null;
  }

  private enqueue(c: Claimed): void {
    let lane = this.lanes.get(c.connection_id);
    if (!lane) {
      lane = { queue: [], running: false, pace: this.paceOf(c.transport) };
      this.lanes.set(c.connection_id, lane);
    }
    lane.queue.push(c);
    // Started on the next tick: the rest of this claim joins the queue, and the first batch, first.
    if (!lane.running) {
      lane.running = true;
      const started = lane;
      this.track(Promise.resolve().then(() => this.drain(c.connection_id, started)));
    }
  }

  private track(p: Promise<void>): void {
    this.active.add(p);
    void p.finally(() => this.active.delete(p));
  }

  private async drain(connectionId: string, lane: Lane): Promise<void> {
    lane.running = true;
    const perBatch = Math.max(1, Math.min(HANDOFF_BATCH, Math.floor(HANDOFF_WINDOW_MS / lane.pace.maxMs)));
    let outageTurns = 0;
    /** The first message of the batch at the head whose slot is reserved: a hand-off that failed half-way, retried as it was. */
    let paced: string | null = null;
    try {
      while (lane.queue.length) {
        // Stopping: a batch whose hand-off failed half-way is finished below; the rest was never
        // started and goes back to the queue for another process.
        if (this.stopping.signal.aborted) {
          const unstarted = lane.queue.splice(paced ? perBatch : 0);
          if (unstarted.length) await releaseClaims(this.db, unstarted).catch((err: unknown) => this.logger.warn({ err }, "claims not given back; they expire with their lock"));
          if (!lane.queue.length) break;
        }
        const batch = lane.queue.splice(0, perBatch);
        try {
          if (paced !== batch[0]!.message_id) {
            // The batch's slot, shared with every other process's hand-offs of this connection.
            const gaps = batch.reduce((sum) => sum + lane.pace.minMs + Math.random() * (lane.pace.maxMs - lane.pace.minMs), 0);
            const wait = await reservePace(this.db, connectionId, gaps);
            if (wait > 0 && !(await sleep(wait, true, { signal: this.stopping.signal }).catch(() => false))) {
              lane.queue.unshift(...batch);
              continue;
            }
            paced = batch[0]!.message_id;
          }
          await this.handOff(batch);
          outageTurns = 0;
          paced = null;
          if (lane.queue.length < this.laneLimit(lane) && this.held.delete(connectionId)) this.loop.wake();
        } catch (err) {
          // The database went away mid hand-off: the claims are still ours, so keep them and try
          // again once it is back (the engine deduplicates a message handed off twice) rather than
          // leave them locked until the lock expires. While stopping, for a few turns only: a
          // hand-off in flight is finished if the database answers within them (a graceful stop),
          // else its claims expire for others.
          if (isDatabaseUnavailable(err) && (this.loop.running || outageTurns < STOPPING_OUTAGE_TURNS)) {
            lane.queue.unshift(...batch);
            await new Promise((r) => setTimeout(r, backoffMs(++outageTurns, 250, MAX_OUTAGE_BACKOFF_MS)));
          } else {
            this.logger.error({ err, message_ids: batch.map((c) => c.message_id) }, "hand-off failed");
            outageTurns = 0;
            paced = null;
          }
        }
      }
    } finally {
      lane.running = false;
      if (lane.queue.length === 0) this.lanes.delete(connectionId);
    }
  }

  /** Hands off claimed messages of one connection, in their order. */
  private async handOff(claims: Claimed[]): Promise<void> {
    // Mark the attempts and read the connection, in one round trip.
    const marked = await markSubmitting(this.db, claims.map((c) => ({ messageId: c.message_id, attempts: c.attempts })), claims[0]!.connection_id);
    const skipped = claims.map((c) => c.message_id).filter((id) => !marked.some((m) => m.m_id === id));
    if (skipped.length) await dropHandOffs(this.db, skipped);
    if (!marked.length) return;
    const connection = marked[0]!.id ? this.db.getRepository(Connection).create(connectionFromRow(marked[0]!)) : null;
    const engine = connection ? this.engines.get(connection.transport) : undefined;
    let outcomes: ({ providerMessageId: string } | EngineError)[];
    try {
      if (!connection || connection.state === "deleted") throw new EngineError("the connection was deleted", true, "connection_deleted");
      if (!engine) throw new EngineError(`no engine ${connection.transport} is configured`, false, "transport_unavailable");
      if (connection.state !== "connected") throw new EngineError(`the connection is ${connection.state}`, false, "connection_not_ready");
      const target = engineConnectionFor(this.config, connection);
      const messages = marked.map((m) => ({
        messageId: m.m_id,
        to: m.recipient,
        body: m.body,
        media: m.media,
        location: m.location,
        quoted: m.quoted && messageRef({ ...m.quoted, providerMessageId: m.quoted.provider_message_id }),
        poll: m.poll,
      }));
      if (messages.length > 1 && engine.sendMany) outcomes = await engine.sendMany(target, messages);
      else {
        outcomes = [];
        for (const message of messages) outcomes.push(await engine.send(target, message).catch((err: unknown) => engineError(err)));
      }
    } catch (err) {
      outcomes = marked.map(() => engineError(err));
    }
    // An engine that failed because our database is unavailable (the sandbox keeps its network
    // there) may have done the work and lost only the answer: that is not a failed send to record
    // and retry later (its reports would then find the message `queued` and be refused). The
    // hand-off is made again once the database is back; the engine deduplicates on the message id.
    const lost = outcomes.find((o) => o instanceof EngineError && isDatabaseUnavailable(o.cause));
    if (lost) throw (lost as EngineError).cause;
    const submitted = marked.flatMap((m, i) => (outcomes[i] instanceof EngineError ? [] : [{ id: m.m_id, providerMessageId: outcomes[i]!.providerMessageId }]));
    // The engine's answers exist only here until written: through an outage (up to the claim's
    // lock) they are written late rather than the messages handed off again. Each write is safe
    // to repeat when its answer was lost.
    const within = this.config.dispatch.lockSeconds * 1000;
    if (submitted.length) await retryWhileUnavailable(() => recordSubmitted(this.db, submitted), within);
    for (const [i, m] of marked.entries()) {
      const e = outcomes[i];
      if (!(e instanceof EngineError)) continue;
      if (e.permanent || m.attempts >= MAX_ATTEMPTS) await retryWhileUnavailable(() => this.recordFailed(m.m_id, e, connection ?? null), within);
      else await retryWhileUnavailable(() => this.recordRetry(m.m_id, m.attempts, e), within);
    }
  }

  private async recordRetry(messageId: string, attempts: number, e: EngineError): Promise<void> {
    const backoff = backoffMs(attempts, 1000, MAX_BACKOFF_MS, { jitter: 0.25 });
    await recordRetry(this.db, messageId, backoff, e.message, `retrying after ${e.code}: ${e.message}`);
  }

  private async recordFailed(messageId: string, e: EngineError, connection: Connection | null): Promise<void> {
    await recordFailed(this.db, messageId, { code: e.code, message: e.message }, connection);
  }
}

/**
 * Reserves `spanMs` of a connection's hand-off time, from its next free moment (or now), on the
 * database's clock so that every process agrees; answers how long to wait for the reservation's start.
 */
export async function reservePace(db: DataSource, connectionId: string, spanMs: number): Promise<number> {
  const [row] = await prepared<{ wait_ms: number }>(
    db,
    "dispatch-reserve-pace",
    `INSERT INTO dispatch_pace AS p (connection_id, next_at) VALUES ($1, clock_timestamp() + make_interval(secs => $2 / 1000.0))
     ON CONFLICT (connection_id) DO UPDATE SET next_at = GREATEST(p.next_at, clock_timestamp()) + make_interval(secs => $2 / 1000.0)
     RETURNING GREATEST(0, EXTRACT(EPOCH FROM (p.next_at - make_interval(secs => $2 / 1000.0) - clock_timestamp())) * 1000)::float8 AS wait_ms`,
    [connectionId, spanMs],
  );
  return row?.wait_ms ?? 0;
}

/**
 * Gives claims back to the queue as they were before this process claimed them, unless another
 * process has claimed them since (their attempts moved on). Names available_at so that the
 * queue's trigger wakes the other processes' dispatchers.
 */
async function releaseClaims(db: DataSource, claims: Claimed[]): Promise<void> {
  await db.query(
    `UPDATE dispatch_queue q SET locked_until = NULL, attempts = q.attempts - 1, available_at = q.available_at
       FROM unnest($1::text[], $2::int[]) AS c(message_id, attempts)
      WHERE q.message_id = c.message_id AND q.attempts = c.attempts`,
    [claims.map((c) => c.message_id), claims.map((c) => c.attempts)],
  );
}

function engineError(err: unknown): EngineError {
  return err instanceof EngineError ? err : Object.assign(new EngineError(err instanceof Error ? err.message : String(err), false), { cause: err });
}
