// Accepting a message. A 202 means the message, its timeline, its hand-off entry (or, for a
// deferred send, its scheduled state), its event, its usage count and its idempotency record were
// committed together: they are written by one SQL statement, which PostgreSQL runs atomically.
// The same statement reads the connection, the key's record and the month's usage and writes
// nothing unless every rule holds, so a send costs one round trip, close to a single INSERT.
import type { DataSource, EntityManager } from "typeorm";
import { hasContent, type SendMessageBody, type Message as MessageView } from "../../contract/index.js";
import type { Connection } from "../connections/entities.js";
import { prepared } from "../db/prepared.js";
import { ApiError, type ErrorCode } from "../http/errors.js";
import { requestFingerprint } from "../http/idempotency.js";
import type { Principal } from "../http/principal.js";
import { isValidTimeZone } from "../time-zones.js";
import { planHas, requirePlanFeature } from "../workspace/plan-gate.js";
import { messagesThisMonth } from "../workspace/usage.js";
import { acceptedDraft, acceptMany, isDeferred, json, type AcceptInput } from "./store/accept.js";
import { isRefusal, refusalText, sendRefusal, type SendRefusal } from "./store/send-rules.js";
import { SendBatcher } from "./send-batch.js";
import type { PollSpec } from "./entities.js";

export type { AcceptInput };

export interface Accepted {
  status: number;
  body: MessageView;
  replayed: boolean;
  /** Set when the message waits for its send_at. */
  scheduledFor?: Date;
}

/** Who a send is for: the workspace and its plan (a caller's principal, or the AI runner acting for the workspace). */
export type SendAs = Pick<Principal, "workspaceId" | "plan">;

export interface SendOptions {
  idempotencyKey?: string | undefined;
  /** A reply: our id of the message it quotes (in the same chat, checked by the caller). */
  replyTo?: string;
  /** A poll: the message carries it instead of a body. */
  poll?: PollSpec;
}

export class MessageSender {
  private readonly batcher: SendBatcher;

  constructor(
    private readonly db: DataSource,
    /** Called when a send was queued for hand-off now (wakes this process's dispatcher). */
    private readonly onQueued: () => void = () => undefined,
  ) {
    this.batcher = new SendBatcher(db);
  }

  /**
   * Accepts a send in one statement (store/accept.ts, batched by send-batch.ts with the sends that
   * arrive at the same time): it reads the connection, the Idempotency-Key's record and the
   * month's usage, and writes the message with everything that goes with it only when every rule
   * holds, so a refused send changes nothing. The decision is then read off what it found: the
   * message accepted (or replayed), or why not, as a value each caller maps to its own answer.
   */
  async send(principal: SendAs, body: SendMessageBody, options: SendOptions = {}): Promise<Accepted | SendRefusal> {
    const invalid = contentRefusal(body, options.poll !== undefined);
    if (invalid) return invalid;
    const key = options.idempotencyKey ?? null;
    // A reply or a poll is a different request from a plain send of the same fields.
    const fingerprint = key ? requestFingerprint({ ...body, ...(options.replyTo !== undefined && { reply_to: options.replyTo }), ...(options.poll && { poll: options.poll }) }) : null;
    const deferred = isDeferred(body.send_at);
    const planRefuses = deferred && !planHas(principal.plan, "scheduling");
    const allowance = principal.plan.messagesPerMonth;
    for (let attempt = 1; ; attempt++) {
      const draft = acceptedDraft({
        workspaceId: principal.workspaceId,
        // Filled in by the statement from the row it reads: the connection's id and number.
        connection: { id: null, slug: body.connection, phone: null } as unknown as Connection,
        body,
        scheduleId: null,
        replyTo: options.replyTo ?? null,
        poll: options.poll ?? null,
      });
      const { message, view, event } = draft;
      const row = await this.batcher.send({
        id: message.id,
        workspaceId: message.workspaceId,
        status: message.status as "queued" | "scheduled",
        recipient: JSON.stringify(message.recipient),
        body: message.body,
        media: json(message.media),
        location: json(message.location),
        context: json(message.context),
        metadata: json(message.metadata),
        contextSensitivity: message.contextSensitivity,
        sendAt: message.sendAt,
        timezone: message.timezone,
        createdAt: message.createdAt,
        idempotencyKey: key,
        fingerprint,
        view,
        connectionSlug: body.connection,
        deferred,
        planRefuses,
        allowance,
        event: event ? { id: event.id, type: event.type, payload: event.payload } : null,
        replyTo: message.replyTo,
        poll: json(message.poll),
      });
      if (row.accepted) {
        const body202 = { ...view, from: row.c_phone };
        // A deferred send's release job was written with it (the job outbox); one for now is queued.
        const scheduledFor = body202.status === "scheduled" && body202.send_at ? new Date(body202.send_at) : undefined;
        if (!scheduledFor) this.onQueued();
        return { status: 202, body: body202, replayed: false, ...(scheduledFor ? { scheduledFor } : {}) };
      }
      if (row.prior_blocks) {
        if (!row.prior_fingerprint!.equals(fingerprint!)) return { code: "idempotency_mismatch" };
        if (row.prior_status === null) return { code: "idempotency_in_flight" };
        return { status: row.prior_status, body: row.prior_body as MessageView, replayed: true };
      }
      if (!row.taken) return { code: "idempotency_in_flight" };
      const refusal = sendRefusal({
        slug: body.connection,
        connection: row.c_id ? { state: row.c_state! } : null,
        plan: { name: principal.plan.name, scheduling: planHas(principal.plan, "scheduling"), messagesPerMonth: allowance },
        used: row.used,
        later: deferred,
        now: !deferred,
      });
      if (refusal) return refusal;
      // Every rule held and yet nothing was written: the key's record was committed by a
      // duplicate after this statement's snapshot was taken. The next attempt sees it.
      if (key && attempt < 3) continue;
      throw new Error(`send ${message.id} was neither accepted nor refused`);
    }
  }

  /** Every rule a send must pass, checked without writing anything: why it would be refused, or null. */
  async check(principal: Principal, body: SendMessageBody): Promise<SendRefusal | null> {
    const invalid = contentRefusal(body);
    if (invalid) return invalid;
    const [row] = await prepared(this.db, "send-connection", CONNECTION_BY_SLUG, [principal.workspaceId, body.connection]);
    const deferred = isDeferred(body.send_at);
    const allowance = principal.plan.messagesPerMonth;
    return sendRefusal({
      slug: body.connection,
      connection: row ? { state: row.state as string } : null,
      plan: { name: principal.plan.name, scheduling: planHas(principal.plan, "scheduling"), messagesPerMonth: allowance },
      used: allowance === null ? 0 : await messagesThisMonth(this.db.manager, principal.workspaceId),
      later: deferred,
      now: !deferred,
    });
  }

  /**
   * Writes several accepted messages in one statement, inside the caller's transaction, without
   * Idempotency-Key records (store/accept.ts; schedule firing calls the store directly). Kept as
   * the sender's entry point for callers that hold a MessageSender.
   */
  acceptMany(em: EntityManager, inputs: AcceptInput[], usageShard: number): Promise<MessageView[]> {
    return acceptMany(em, inputs, usageShard);
  }

  /** The problem response of a refused send, for the edges that answer with one (the API, the tool endpoint). */
  async problem(principal: SendAs, refusal: SendRefusal): Promise<ApiError> {
    switch (refusal.code) {
      case "invalid_content":
        return ApiError.validation(refusal.errors);
      case "connection_not_found":
        return ApiError.validation([{ path: "connection", message: `no connection with slug ${refusal.slug}` }]);
      case "plan_required":
        // The one plan gate makes the 402 that names the cheapest plan with scheduling.
        try {
          await requirePlanFeature(this.db, principal.plan, "scheduling");
        } catch (err) {
          if (err instanceof ApiError) return err;
          throw err;
        }
        return new ApiError("plan_required", refusalText(refusal));
      case "connection_not_ready":
      case "idempotency_mismatch":
        return new ApiError(refusal.code, refusalText(refusal));
      case "quota_exceeded":
        return new ApiError("quota_exceeded", refusalText(refusal), { retryAfter: secondsToNextMonth() });
      case "idempotency_in_flight":
        return new ApiError("idempotency_in_flight", refusalText(refusal), { retryAfter: 1 });
    }
  }

  /** Accepts the send, or throws the problem of its refusal: the API's and the tool endpoint's send. */
  async sendOrThrow(principal: SendAs, body: SendMessageBody, options: SendOptions = {}): Promise<Accepted> {
    const outcome = await this.send(principal, body, options);
    if (isRefusal(outcome)) throw await this.problem(principal, outcome);
    return outcome;
  }
}

/** The error code a refusal answers with (validation_failed for what names a wrong field). */
export function refusalCode(refusal: SendRefusal): ErrorCode {
  return refusal.code === "invalid_content" || refusal.code === "connection_not_found" ? "validation_failed" : refusal.code;
}

const CONNECTION_BY_SLUG = `SELECT state FROM connections WHERE workspace_id = $1 AND slug = $2 AND deleted_at IS NULL`;

/** The rules that need no database: content, attachment scheme, time zone. */
function contentRefusal(body: SendMessageBody, isPoll = false): SendRefusal | null {
  const errors: { path: string; message: string }[] = [];
  if (!isPoll && !hasContent(body)) errors.push({ path: "body", message: "a message needs a body, media or a location" });
  if (body.media && !/^https?:$/.test(new URL(body.media.url).protocol)) errors.push({ path: "media.url", message: "must be an http or https URL" });
  if (body.timezone !== undefined && !isValidTimeZone(body.timezone)) errors.push({ path: "timezone", message: "must be an IANA time zone name" });
  return errors.length ? { code: "invalid_content", errors } : null;
}

function secondsToNextMonth(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}
