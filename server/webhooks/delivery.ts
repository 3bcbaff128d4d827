// Webhook delivery. A delivery row (one per endpoint and event, made by fanout.ts) is attempted by
// whoever claims it: this process's worker loop makes every first attempt (and a resend's), a
// `webhook.retry` Agenda job (jobs/webhook-retry.ts) makes each retry at its scheduled time. Both
// claim through the same conditional UPDATE (pending, due, lock free or expired), so an attempt
// runs in one place at a time on any number of processes. The retry's job is written to the job
// outbox by the statement that records the failed attempt, so it exists exactly when the failure
// does; a process that dies in the middle of an attempt leaves its job locked, and Agenda runs it
// again once the lock expires.
//
// Each attempt re-checks the URL (deliverWebhook resolves the host once and connects to the
// checked address), signs the exact bytes sent with the SDK's scheme, and records the attempt and
// the delivery's next state in one statement.
import { randomUUID } from "node:crypto";
import type { DataSource } from "typeorm";
import { signWebhookPayload } from "../../sdk/src/webhooks.js";
import { WEBHOOK_RETRY_JOB } from "../../jobs/names.js";
import { jittered } from "../backoff.js";
import { retryWhileUnavailable } from "../db/availability.js";
import { rows } from "../db/rows.js";
import type { Logger } from "../logger.js";
import { PollingLoop } from "../polling-loop.js";
import { decrypt } from "../secrets.js";
import type { AllowList, Lookup } from "../outbound/address-policy.js";
import type { AttemptTrigger, DeliveryStatus } from "./entities.js";
import { deliverWebhook, WebhookDeliveryError } from "../outbound/safe-request.js";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * The retry schedule (docs/webhooks.md, "Retries"): the delay before retry n after n failed attempts. One attempt
 * plus eight retries spread over about 45 hours; when they are spent the delivery is `failed`.
 * A receiver that is down for an hour gets its events with the retry at about 2 h 36 min.
 */
export const RETRY_SCHEDULE_MS: readonly number[] = [
  10 * SECOND,
  1 * MINUTE,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  6 * HOUR,
  12 * HOUR,
  24 * HOUR,
];

/** Every delay is scaled by a random factor in [1 - RETRY_JITTER, 1 + RETRY_JITTER], so a burst of failures does not retry in lockstep. */
export const RETRY_JITTER = 0.2;

/** A receiver's Retry-After is honoured up to this long (the schedule's longest step). */
export const RETRY_AFTER_MAX_MS = 24 * HOUR;

/** How the last attempt failed, as far as the next delay depends on it. */
export interface FailedAttempt {
  statusCode: number | null;
  errorCode: string;
  /** The response's Retry-After header, if any. */
  retryAfter?: string | undefined;
}

export interface RetryDelayOptions {
  failure?: FailedAttempt;
  schedule?: readonly number[];
  random?: () => number;
  nowMs?: number;
}

/**
 * Delay before the retry that follows `failures` failed attempts; undefined when the schedule is
 * spent. A receiver that is overwhelmed (429) or too slow to answer (a timeout) waits twice the
 * step; a 429 or 503 with Retry-After is not retried before it (up to RETRY_AFTER_MAX_MS), nor
 * before the step's own delay. None of these spends a retry.
 */
export function retryDelayMs(failures: number, { failure, schedule = RETRY_SCHEDULE_MS, random = Math.random, nowMs = Date.now() }: RetryDelayOptions = {}): number | undefined {
  const base = schedule[failures - 1];
  if (base === undefined || failures < 1) return undefined;
  const pressed = failure?.statusCode === 429 || failure?.errorCode === "timeout";
  const delay = jittered(pressed ? 2 * base : base, { jitter: RETRY_JITTER, random });
  const honoured = failure?.statusCode === 429 || failure?.statusCode === 503;
  const asked = honoured && failure.retryAfter !== undefined ? retryAfterMs(failure.retryAfter, nowMs) : undefined;
  return asked === undefined ? delay : Math.max(delay, Math.min(asked, RETRY_AFTER_MAX_MS));
}

/** A Retry-After value (delay-seconds or an HTTP-date, RFC 9110 10.2.3) in milliseconds from `nowMs`; undefined when it is neither. */
export function retryAfterMs(value: string, nowMs: number): number | undefined {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * SECOND;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

const PAYLOAD_KEYS = ["id", "type", "created_at", "connection", "data"];

/**
 * The request body: the stored event payload, top-level keys in the documented order (jsonb
 * stores keys sorted by length). The same bytes on every attempt; the signature covers them.
 */
export function payloadBody(payload: Record<string, unknown>): string {
  const ordered: Record<string, unknown> = {};
  for (const key of PAYLOAD_KEYS) if (key in payload) ordered[key] = payload[key];
  for (const [key, value] of Object.entries(payload)) if (!(key in ordered)) ordered[key] = value;
  return JSON.stringify(ordered);
}

export const USER_AGENT = "svc-gateway-webhooks/1";

/** The headers of docs/webhooks.md; the signature is over `"<t>.<body>"` with t = Svc-Timestamp. */
export function deliveryHeaders(secret: string, event: { id: string; type: string }, body: string, nowMs = Date.now()): Record<string, string> {
  const t = Math.floor(nowMs / 1000);
  return {
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    "Svc-Event-Id": event.id,
    "Svc-Event-Type": event.type,
    "Svc-Timestamp": String(t),
    "Svc-Signature": signWebhookPayload(secret, t, body),
  };
}

export interface WebhookDelivererOptions {
  secretKey: Buffer;
  allowPrivate: AllowList;
  /** Per attempt, including the host lookup; 10 s in production. */
  timeoutMs: number;
  retryScheduleMs?: readonly number[];
  /** Host resolver (tests); default the system's. */
  lookup?: Lookup;
  /** Attempts in flight in the worker loop of this process. */
  concurrency?: number;
  /** Attempts in flight per endpoint, so one slow receiver cannot take every slot. */
  perEndpoint?: number;
}

interface Claimed {
  /** This claim's token: only its holder records the outcome. */
  token: string;
  id: string;
  endpoint_id: string;
  event_type: string;
  attempt_count: number;
  retry_step: number;
  url: string;
  secret_sealed: string;
  payload: Record<string, unknown>;
}

export interface AttemptOutcome {
  attemptedAt: Date;
  trigger: AttemptTrigger;
  statusCode: number | null;
  latencyMs: number;
  errorCode: string | null;
  error: string | null;
  /** The delivery's state after the attempt. */
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
}

const CLAIM_BATCH_MAX = 100;
// The fan-out of this process wakes the loop; the poll finds work made by other processes and overdue retries.
const IDLE_POLL_MS = 1000;
/** Columns every claim returns: the delivery, its endpoint's URL and secret, and the event payload. */
const CLAIM_RETURNING = `d.id, d.endpoint_id, d.event_type, d.attempt_count, d.retry_step, e.url, e.secret_sealed, ev.payload`;

export class WebhookDeliverer {
  private readonly loop: PollingLoop;
  /** The loop idles because too few slots are free; track() wakes it once enough are. */
  private waitingForRoom = false;
  /** The size of the loop's current claim; 0 while it waits for room. */
  private claimLimit = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perEndpointInFlight = new Map<string, number>();
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly schedule: readonly number[];
  /** How long a claim holds: longer than any attempt can take, so only a crash lets it expire. */
  private readonly lockMs: number;

  constructor(
    private readonly db: DataSource,
    private readonly logger: Logger,
    private readonly options: WebhookDelivererOptions,
  ) {
    this.concurrency = options.concurrency ?? 128;
    this.perEndpoint = Math.min(options.perEndpoint ?? 32, this.concurrency);
    this.schedule = options.retryScheduleMs ?? RETRY_SCHEDULE_MS;
    this.lockMs = options.timeoutMs + 30 * SECOND;
    this.loop = new PollingLoop({
      tick: () => this.claimAndAttempt(),
      full: (n) => this.claimLimit > 0 && n >= this.claimLimit,
      idleMs: IDLE_POLL_MS,
      logger,
      errorMessage: "webhook delivery claim failed",
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops claiming and waits for the attempts in flight; nothing claimed is left unrecorded. */
  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.all(this.inFlight);
  }

  /** New deliveries exist (fan-out, resend): look now rather than at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /**
   * The Agenda retry job's entry point: attempts `deliveryId` if it is still pending, due and not
   * claimed elsewhere; otherwise (succeeded meanwhile, resent, taken by the loop) does nothing.
   */
  async attemptDue(deliveryId: string): Promise<AttemptOutcome | undefined> {
    const token = randomUUID();
    const [claimed] = await this.claimed(
      token,
      `UPDATE webhook_deliveries d SET locked_until = now() + ($2 || ' milliseconds')::interval, claim_token = $3
         FROM webhook_endpoints e, events ev
        WHERE d.id = $1 AND d.status = 'pending' AND d.next_attempt_at <= now() + interval '1 second'
          AND (d.locked_until IS NULL OR d.locked_until < now())
          AND e.id = d.endpoint_id AND ev.id = d.event_id
        RETURNING ${CLAIM_RETURNING}`,
      [deliveryId, String(this.lockMs), token],
    );
    return claimed ? this.attempt(claimed) : undefined;
  }

  /**
   * Runs a claiming statement. When its answer is lost (the statement may have committed), the
   * claim is released at once rather than left to expire, so the deliveries are not held up; in a
   * database outage, as soon as the database is back.
   */
  private async claimed(token: string, sql: string, params: unknown[]): Promise<Claimed[]> {
    try {
      return (await rows<Omit<Claimed, "token">>(this.db, sql, params)).map((c) => ({ ...c, token }));
    } catch (err) {
      await retryWhileUnavailable(() => this.db.query(`UPDATE webhook_deliveries SET locked_until = NULL, claim_token = NULL WHERE claim_token = $1`, [token]), this.lockMs)
        .catch((releaseErr: unknown) => this.logger.warn({ err: releaseErr }, "webhook claim not released; it will expire"));
      throw err;
    }
  }

  /**
   * One turn of the worker loop: claims as many deliveries as there is room for and starts them.
   * With too little room it claims nothing and the loop idles until attempts finish (track wakes it).
   */
  private async claimAndAttempt(): Promise<number> {
    this.waitingForRoom = false;
    const room = this.concurrency - this.inFlight.size;
    if (room < Math.max(1, Math.floor(this.concurrency / 4))) {
      this.waitingForRoom = true;
      this.claimLimit = 0;
      return 0;
    }
    this.claimLimit = Math.min(room, CLAIM_BATCH_MAX);
    const claimed = await this.claim(this.claimLimit);
    for (const c of claimed) this.track(c);
    return claimed.length;
  }

  /**
   * First attempts and resends (retry_step 0) that are due, skipping endpoints that already have
   * their share of attempts in flight here. Retries are their jobs' (attemptDue).
   */
  private async claim(limit: number): Promise<Claimed[]> {
    const saturated = [...this.perEndpointInFlight].filter(([, n]) => n >= this.perEndpoint).map(([id]) => id);
    const token = randomUUID();
    return this.claimed(
      token,
      `WITH c AS (
         SELECT id FROM webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= now()
            AND (locked_until IS NULL OR locked_until < now())
            AND retry_step = 0
            AND endpoint_id <> ALL($3::text[])
          ORDER BY next_attempt_at
          LIMIT $1
          FOR UPDATE SKIP LOCKED
       )
       UPDATE webhook_deliveries d SET locked_until = now() + ($2 || ' milliseconds')::interval, claim_token = $4
         FROM c, webhook_endpoints e, events ev
        WHERE d.id = c.id AND e.id = d.endpoint_id AND ev.id = d.event_id
        RETURNING ${CLAIM_RETURNING}`,
      [limit, String(this.lockMs), saturated, token],
    );
  }

  private track(c: Claimed): void {
    this.perEndpointInFlight.set(c.endpoint_id, (this.perEndpointInFlight.get(c.endpoint_id) ?? 0) + 1);
    const p = this.attempt(c)
      .then(() => undefined)
      .catch((err: unknown) => this.logger.error({ err, delivery_id: c.id }, "webhook attempt could not be recorded; its claim will expire and it will be retried"))
      .finally(() => {
        this.inFlight.delete(p);
        const left = (this.perEndpointInFlight.get(c.endpoint_id) ?? 1) - 1;
        if (left > 0) this.perEndpointInFlight.set(c.endpoint_id, left);
        else this.perEndpointInFlight.delete(c.endpoint_id);
        // Claim again once a useful batch fits (not after every single attempt): when a quarter
        // of the slots is free, or a saturated endpoint has half its share free.
        const roomFreed = this.waitingForRoom && this.inFlight.size <= this.concurrency - Math.max(1, Math.floor(this.concurrency / 4));
        const endpointFreed = left === Math.floor(this.perEndpoint / 2);
        if (roomFreed || endpointFreed) this.wake();
      });
    this.inFlight.add(p);
  }

  /** Makes one attempt for a claimed delivery and records it with the delivery's next state. */
  private async attempt(c: Claimed): Promise<AttemptOutcome> {
    const trigger: AttemptTrigger = c.retry_step > 0 ? "retry" : c.attempt_count > 0 ? "manual" : "initial";
    const attemptedAt = new Date();
    const started = performance.now();
    let statusCode: number | null = null;
    let errorCode: string | null = null;
    let error: string | null = null;
    let retryAfter: string | undefined;
    try {
      const body = payloadBody(c.payload);
      const secret = decrypt(this.options.secretKey, c.secret_sealed);
      const headers = deliveryHeaders(secret, { id: String(c.payload.id), type: c.event_type }, body);
      const result = await deliverWebhook(
        c.url,
        { allowPrivate: this.options.allowPrivate, ...(this.options.lookup ? { lookup: this.options.lookup } : {}) },
        { headers, body, timeoutMs: this.options.timeoutMs },
      );
      statusCode = result.status;
      retryAfter = result.retryAfter;
      if (result.status < 200 || result.status > 299) {
        errorCode = "http_status";
        error = result.status >= 300 && result.status < 400 ? `HTTP ${result.status} (redirects are not followed)` : `HTTP ${result.status}`;
      }
    } catch (err) {
      if (err instanceof WebhookDeliveryError) {
        errorCode = err.reason;
        // The request's own timer counts what is left after the lookup; the budget is the setting.
        error = err.reason === "timeout" && err.message.startsWith("no response") ? `no response within ${this.options.timeoutMs} ms` : err.message;
      } else {
        errorCode = "internal";
        error = "the gateway could not make the attempt";
        this.logger.error({ err, delivery_id: c.id }, "webhook attempt failed inside the gateway");
      }
    }
    const latencyMs = Math.round(performance.now() - started);
    let status: DeliveryStatus = "succeeded";
    let nextAttemptAt: Date | null = null;
    let retryStep = c.retry_step;
    if (errorCode !== null) {
      retryStep = c.retry_step + 1;
      const delay = retryDelayMs(retryStep, { failure: { statusCode, errorCode, retryAfter }, schedule: this.schedule });
      if (delay === undefined) status = "failed";
      else {
        status = "pending";
        nextAttemptAt = new Date(Date.now() + delay);
      }
    }
    const outcome: AttemptOutcome = { attemptedAt, trigger, statusCode, latencyMs, errorCode, error, status, nextAttemptAt };
    // Recording is idempotent (it needs the claim token, which it clears), so a lost answer is
    // simply recorded again, and through a database outage it is retried for as long as the claim
    // holds; only an outage longer than that leaves the claim to expire and the event delivered
    // once more.
    await retryWhileUnavailable(() => this.record(c, outcome, retryStep), this.lockMs - this.options.timeoutMs);
    return outcome;
  }

  /**
   * Writes the attempt, the delivery's next state and its retry's job in one statement, if this claim still holds
   * the delivery; answers the delivery's status then (undefined: not ours any more). A delivery
   * canceled meanwhile (its endpoint deleted) keeps that state; the attempt is still recorded.
   */
  private async record(c: Claimed, o: AttemptOutcome, retryStep: number): Promise<DeliveryStatus | undefined> {
    const [row] = await rows<{ status: DeliveryStatus }>(
      this.db,
      `WITH d AS (
         UPDATE webhook_deliveries SET
                attempt_count = attempt_count + 1, locked_until = NULL, claim_token = NULL, last_status_code = $4, last_error = $7,
                status = CASE WHEN status = 'pending' THEN $8 ELSE status END,
                retry_step = CASE WHEN status = 'pending' THEN $9 ELSE retry_step END,
                next_attempt_at = CASE WHEN status = 'pending' THEN $10::timestamptz ELSE next_attempt_at END,
                completed_at = CASE WHEN status = 'pending' AND $8 <> 'pending' THEN now() ELSE completed_at END
          WHERE id = $1 AND claim_token = $11
          RETURNING id, status
       ), a AS (
         INSERT INTO webhook_attempts (delivery_id, attempted_at, trigger, status_code, latency_ms, error_code, error)
         SELECT id, $2, $3, $4, $5, $6, $7 FROM d
       ), j AS (
         INSERT INTO job_outbox (name, data, run_at)
         SELECT '${WEBHOOK_RETRY_JOB}', jsonb_build_object('delivery_id', id), $10::timestamptz FROM d WHERE status = 'pending' AND $10::timestamptz IS NOT NULL
       )
       SELECT status FROM d`,
      [c.id, o.attemptedAt, o.trigger, o.statusCode, o.latencyMs, o.errorCode, o.error, o.status, retryStep, o.nextAttemptAt, c.token],
    );
    return row?.status;
  }
}
