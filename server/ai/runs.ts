// AI runs (docs/ai.md): what happens after an inbound message started one.
//
// The trigger (server/messages/store/reports.ts) leaves a debounce row per (connection, contact),
// due 3 s after the contact's last message. An `ai.run` job (jobs/ai-run.ts) then:
//   1. claims the due row and inserts the run, in one statement (two processes never both claim
//      it; the run is unique on the inbound message it answers, so a retried job never answers
//      twice), holding the run's lease;
//   2. refuses in order: credential gone → credential_missing; the contact written to from the
//      linked phone in the last 30 minutes → human_active; more than 30 runs in the last minute
//      on the connection → rate_limited; the monthly cost ceiling → cost_limit_reached. The rate
//      and cost checks run under a per-connection lock, and a run that passes reserves its worst
//      case in its row until the real cost replaces it: two runs racing at a limit cannot both pass;
//   3. builds the context, calls the vendor (server/ai/vendor.ts) and, in draft mode, records
//      `ai.draft.created` with the outcome; in auto mode sends the reply through the ordinary send
//      path (Idempotency-Key `ai-reply:<inbound message id>`), then records `ai.reply.sent`.
// A run whose holder died (its lease passed) is resumed from its state: `pending` runs from the
// start; `calling` (the vendor may have billed it) is finished as `replied` when its reply exists,
// else recorded as `vendor_error` / `interrupted` with its worst case kept as its cost.
//
// Nothing here logs a prompt, a completion or a message body: log lines carry ids and codes only.
import { createHash } from "node:crypto";
import type { DataSource } from "typeorm";
import type { AiMode, AiProvider, AiRun, AiRunList, AiRunOutcome, ListAiRunsQuery, SendMessageBody } from "../../contract/index.js";
import { planFromRow, PLAN_COLUMNS, type PlanRow } from "../auth/credentials.js";
import { MICROSECOND_INSTANT } from "../db/instant.js";
import { rows } from "../db/rows.js";
import { buildEvent, EVENT_INSERT_COLUMNS, eventParams } from "../events/record.js";
import { decodeCursor, encodeCursor, filterFingerprint } from "../http/cursor.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import { PHONE_ORIGIN } from "../messages/store/reports.js";
import { AI_RUN_JOB } from "../../jobs/names.js";
import { refusalCode, type MessageSender } from "../messages/send.js";
import { isRefusal } from "../messages/store/send-rules.js";
import { AI_VENDOR_TIMEOUT_MAX_S } from "../config.js";
import { decrypt } from "../secrets.js";
import type { AllowList } from "../outbound/address-policy.js";
import { callVendor, VendorError, vendorRequestBody, type VendorRequest } from "./vendor.js";

/** How long a contact written to from the linked phone is left to the human. */
export const HUMAN_ACTIVE_MINUTES = 30;
/** Runs per minute and connection that may reach the vendor. */
export const AI_RUNS_PER_MINUTE = 30;
/**
 * How long a process holds a run it works on. Longer than the slowest vendor call (its one time
 * bound, AI_VENDOR_TIMEOUT_S, at most AI_VENDOR_TIMEOUT_MAX_S) plus a send; past it, another
 * process may resume the run.
 */
export const AI_RUN_LEASE_MS = 180_000;
if (AI_RUN_LEASE_MS < (AI_VENDOR_TIMEOUT_MAX_S + 30) * 1000) throw new Error("AI_RUN_LEASE_MS must outlast the longest vendor call and a send");
/** Messages of the conversation read to build a context (more never fit 32 KiB anyway). */
const CONTEXT_MESSAGES = 200;

/**
 * A CTE member over the runs `r` a statement leases ($1 connection, $2 contact, `lease` the
 * parameter of the lease in ms): the `ai.run` job that resumes them once the lease has passed,
 * should the process holding them die; it finds nothing to do when they finished.
 */
function resumeJob(lease: string): string {
  return `j AS (
         INSERT INTO job_outbox (name, data, run_at)
         SELECT DISTINCT '${AI_RUN_JOB}', jsonb_build_object('connection_id', $1::text, 'contact', $2::text), now() + ${lease} * interval '1 millisecond' FROM r
       )`;
}

export const REDACTED = "[redacted]";
/** What the model sees of a message without text. */
export const MEDIA_PLACEHOLDER = "[media]";
export const LOCATION_PLACEHOLDER = "[location]";

export interface AiRunnerOptions {
  secretKey: Buffer;
  /** The outbound address policy's allow-list (OUTBOUND_ALLOW_PRIVATE). */
  allowPrivate: AllowList;
  /** The vendor call's one time bound, retries included (AI_VENDOR_TIMEOUT_S); default the vendor module's (30 s). */
  vendorTimeoutMs?: number;
  /** Counts a vendor answer that reported more tokens than the request allowed (the `/metrics` counter). */
  onUsageOverLimit?: (provider: AiProvider) => void;
}

/** The cost of a run in micros: each side rounded up separately, exactly (prices reach 2^53-1). */
export function costMicros(inputTokens: number, outputTokens: number, inputPricePerMillion: bigint, outputPricePerMillion: bigint): bigint {
  return ceilDiv(BigInt(inputTokens) * inputPricePerMillion, 1_000_000n) + ceilDiv(BigInt(outputTokens) * outputPricePerMillion, 1_000_000n);
}

/** Token counts of one side each (input, output). */
export interface Tokens {
  inputTokens: number;
  outputTokens: number;
}

/**
 * What a run counts of the usage a vendor reports: never more than the vendor could bill for the
 * request, which is its worst case: the request body's UTF-8 bytes as input tokens (a token is
 * never shorter than a byte) and the `max_output_tokens` it asked for as output. `over`: the
 * vendor reported more than that on either side (it is flagged, and counted at the limit).
 */
export function countedUsage(reported: Tokens, limit: Tokens): Tokens & { over: boolean } {
  return {
    inputTokens: Math.min(reported.inputTokens, limit.inputTokens),
    outputTokens: Math.min(reported.outputTokens, limit.outputTokens),
    over: reported.inputTokens > limit.inputTokens || reported.outputTokens > limit.outputTokens,
  };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** A conversation message as the context builder reads it. */
export interface ConversationMessage {
  direction: "inbound" | "outbound";
  body: string | null;
  hasMedia: boolean;
  hasLocation: boolean;
  contextSensitivity: string | null;
}

/**
 * The context (docs/ai.md): newest first, packed into `maxBytes` UTF-8 bytes together with the
 * system instruction, returned oldest first. Inbound → user, outbound → assistant; restricted
 * outbound messages never included, sensitive ones as `[redacted]`; a message without text as a
 * placeholder. Packing stops at the first message that does not fit (the context stays a
 * contiguous stretch of the conversation); when not even the newest fits, it is cut to what is left.
 */
export function buildContext(system: string, newestFirst: ConversationMessage[], maxBytes: number): VendorRequest["messages"] {
  let left = maxBytes - utf8Bytes(system);
  const packed: VendorRequest["messages"] = [];
  for (const m of newestFirst) {
    const content = contentOf(m);
    if (content === null) continue;
    const size = utf8Bytes(content);
    const role = m.direction === "inbound" ? "user" : "assistant";
    if (size <= left) {
      packed.push({ role, content });
      left -= size;
      continue;
    }
    if (!packed.length) packed.push({ role, content: cutUtf8(content, Math.max(0, left)) });
    break;
  }
  return packed.reverse();
}

function contentOf(m: ConversationMessage): string | null {
  if (m.direction === "outbound" && m.contextSensitivity === "restricted") return null;
  if (m.direction === "outbound" && m.contextSensitivity === "sensitive") return REDACTED;
  if (m.body) return m.body;
  if (m.hasMedia) return MEDIA_PLACEHOLDER;
  if (m.hasLocation) return LOCATION_PLACEHOLDER;
  return null;
}

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, never splitting a character. */
function cutUtf8(text: string, bytes: number): string {
  let out = "";
  let used = 0;
  for (const ch of text) {
    const n = utf8Bytes(ch);
    if (used + n > bytes) break;
    out += ch;
    used += n;
  }
  return out;
}

interface RunRow {
  id: string;
  workspace_id: string;
  connection_id: string;
  message_id: string;
  contact: string;
  state: "pending" | "calling" | "done";
  cost_micros: string;
}

interface RunSetting extends PlanRow {
  slug: string;
  connection_phone: string | null;
  mode: AiMode | null;
  model: string | null;
  system_instruction: string | null;
  max_context_bytes: number | null;
  max_output_tokens: number | null;
  monthly_cost_limit_micros: string | null;
  input_cost_micros_per_million: string | null;
  output_cost_micros_per_million: string | null;
  credential_id: string | null;
  provider: AiProvider | null;
  base_url: string | null;
  api_key_sealed: string | null;
}

type Finish = {
  outcome: AiRunOutcome;
  error?: string | null;
  promptSha256?: string | null;
  inputTokens?: number;
  outputTokens?: number;
  costMicros?: bigint;
  latencyMs?: number | null;
  replyMessageId?: string | null;
};

const RUN_COLUMNS = `id, workspace_id, connection_id, message_id, contact, state, cost_micros`;

export class AiRunner {
  constructor(
    private readonly db: DataSource,
    private readonly sender: MessageSender,
    private readonly logger: Logger,
    private readonly options: AiRunnerOptions,
  ) {}

  /**
   * The `ai.run` job of a (connection, contact): claims the due debounce row, if any, into a run,
   * then works on every unfinished run of the pair that no live process holds.
   */
  async runDue(connectionId: string, contact: string): Promise<void> {
    const claimed = await this.claim(connectionId, contact);
    if (claimed) await this.work(claimed);
    else {
      // Not due yet (a later message pushed it): make sure a job meets it, whatever clock ran this one early.
      await this.db.query(
        `INSERT INTO job_outbox (name, data, run_at)
         SELECT $3, jsonb_build_object('connection_id', connection_id, 'contact', contact), due_at FROM ai_debounce WHERE connection_id = $1 AND contact = $2`,
        [connectionId, contact, AI_RUN_JOB],
      );
    }
    for (const run of await this.takeStale(connectionId, contact)) await this.work(run);
  }

  /**
   * The due debounce row → a pending run held by this process, in one statement; null when none is
   * due (or the policy was disabled, or the plan no longer includes AI: the row is dropped then).
   */
  private async claim(connectionId: string, contact: string): Promise<RunRow | null> {
    const [run] = await rows<RunRow>(
      this.db,
      `WITH d AS (
         DELETE FROM ai_debounce WHERE connection_id = $1 AND contact = $2 AND due_at <= now() RETURNING *
       ), r AS (
         INSERT INTO ai_runs (id, workspace_id, connection_id, message_id, contact, mode, model, state, lease_until)
         SELECT $3, d.workspace_id, d.connection_id, d.message_id, d.contact, p.mode, p.model, 'pending', now() + $4 * interval '1 millisecond'
           FROM d JOIN ai_policies p ON p.connection_id = d.connection_id AND p.enabled
                  JOIN workspaces w ON w.id = d.workspace_id
                  JOIN plans pl ON pl.id = w.plan_id AND pl.ai
         ON CONFLICT (message_id) DO NOTHING
         RETURNING ${RUN_COLUMNS}
       ), ${resumeJob("$4")}
       SELECT * FROM r`,
      [connectionId, contact, newId("airun"), AI_RUN_LEASE_MS],
    );
    return run ?? null;
  }

  /** The pair's unfinished runs whose lease has passed, now held by this process (with the job that resumes them should it die). */
  private takeStale(connectionId: string, contact: string): Promise<RunRow[]> {
    return rows<RunRow>(
      this.db,
      `WITH r AS (
         UPDATE ai_runs SET lease_until = now() + $3 * interval '1 millisecond'
          WHERE connection_id = $1 AND contact = $2 AND state <> 'done' AND lease_until < now()
          RETURNING ${RUN_COLUMNS}
       ), ${resumeJob("$3")}
       SELECT * FROM r`,
      [connectionId, contact, AI_RUN_LEASE_MS],
    );
  }

  private async work(run: RunRow): Promise<void> {
    const log = this.logger.child({ ai_run_id: run.id, message_id: run.message_id });
    try {
      if (run.state === "calling") await this.resumeCalling(run);
      else await this.fromStart(run, log);
    } catch (err) {
      // Left with its lease: once it passes, the job written with the lease resumes the run.
      log.error({ err }, "AI run failed; it is resumed when its lease passes");
      throw err;
    }
  }

  /** A run whose vendor call was cut by a crash: replied if its reply exists, else recorded. */
  private async resumeCalling(run: RunRow): Promise<void> {
    const [reply] = await rows<{ id: string }>(
      this.db,
      `SELECT id FROM messages WHERE connection_id = $1 AND direction = 'outbound' AND metadata->>'ai_run_id' = $2 LIMIT 1`,
      [run.connection_id, run.id],
    );
    if (reply) {
      // Its tokens are unknown: the worst case reserved stays its cost.
      await this.finish(run, { outcome: "replied", replyMessageId: reply.id }, {
        type: "ai.reply.sent",
        data: { run_id: run.id, message_id: run.message_id, reply_message_id: reply.id, contact: run.contact },
      });
    } else {
      await this.finish(run, { outcome: "vendor_error", error: "interrupted" });
    }
  }

  private async fromStart(run: RunRow, log: Logger): Promise<void> {
    const s = await this.setting(run);
    if (!s || s.mode === null) {
      // The policy was removed since the claim: nothing to answer with.
      await this.finish(run, { outcome: "credential_missing", error: "policy_missing" });
      return;
    }
    if (!s.provider || !s.api_key_sealed) {
      await this.finish(run, { outcome: "credential_missing" });
      return;
    }
    if (await this.humanActive(run)) {
      await this.finish(run, { outcome: "human_active" });
      return;
    }

    const request: VendorRequest = {
      provider: s.provider,
      apiKey: decrypt(this.options.secretKey, s.api_key_sealed),
      baseUrl: s.base_url,
      model: s.model!,
      system: s.system_instruction!,
      messages: buildContext(s.system_instruction!, await this.conversation(run), s.max_context_bytes!),
      maxOutputTokens: s.max_output_tokens!,
    };
    const body = vendorRequestBody(request);
    const inPrice = BigInt(s.input_cost_micros_per_million!);
    const outPrice = BigInt(s.output_cost_micros_per_million!);
    // What is asked for caps what can be billed: the worst case reserved, and the most a run counts.
    const limit: Tokens = { inputTokens: utf8Bytes(body), outputTokens: request.maxOutputTokens };
    const worstCase = costMicros(limit.inputTokens, limit.outputTokens, inPrice, outPrice);
    const monthlyLimit = s.monthly_cost_limit_micros === null ? null : BigInt(s.monthly_cost_limit_micros);

    const refused = await this.reserve(run, worstCase, monthlyLimit, sha256Hex(body));
    if (refused) {
      await this.finish(run, { outcome: refused });
      return;
    }

    let answer;
    // The vendor call's own clock for a failed call (an answer carries its latencyMs): retries
    // included, recorded whenever a request went out.
    const calledAt = performance.now();
    try {
      answer = await callVendor(request, {
        allowPrivate: this.options.allowPrivate,
        ...(this.options.vendorTimeoutMs !== undefined ? { timeoutMs: this.options.vendorTimeoutMs } : {}),
      });
    } catch (err) {
      if (!(err instanceof VendorError)) throw err;
      if (err.requestBody !== null) await this.touchCredential(s.credential_id!);
      // The vendor bills what it generated: an answer it cut (timeout) or sent unreadable may have
      // cost the worst case; a refusal with a status (429, 4xx, 5xx) or no request at all did not.
      const billed = err.code === "vendor_timeout" || err.code === "vendor_bad_response";
      log.warn({ error: err.code, status: err.status }, "AI run: vendor call failed");
      await this.finish(run, {
        outcome: "vendor_error",
        error: err.code,
        promptSha256: err.requestBody === null ? null : sha256Hex(err.requestBody),
        costMicros: billed ? worstCase : 0n,
        latencyMs: err.requestBody === null ? null : Math.round(performance.now() - calledAt),
      });
      return;
    }
    await this.touchCredential(s.credential_id!);
    const counted = countedUsage(answer, limit);
    if (counted.over) {
      // Counts only: never a text.
      log.warn(
        { provider: s.provider, reported_input_tokens: answer.inputTokens, reported_output_tokens: answer.outputTokens, max_input_tokens: limit.inputTokens, max_output_tokens: limit.outputTokens },
        "AI run: the vendor reported more tokens than the request allows; counted at the limit",
      );
      this.options.onUsageOverLimit?.(s.provider);
    }
    const used: Finish = {
      outcome: s.mode === "draft" ? "drafted" : "replied",
      promptSha256: sha256Hex(answer.requestBody),
      inputTokens: counted.inputTokens,
      outputTokens: counted.outputTokens,
      costMicros: costMicros(counted.inputTokens, counted.outputTokens, inPrice, outPrice),
      latencyMs: Math.round(answer.latencyMs),
    };

    if (s.mode === "draft") {
      await this.finish(run, used, { type: "ai.draft.created", data: { run_id: run.id, message_id: run.message_id, contact: run.contact, text: answer.text } });
      return;
    }

    const send: SendMessageBody = { connection: s.slug, to: run.contact, body: answer.text, metadata: { ai_run_id: run.id } };
    const accepted = await this.sender.send({ workspaceId: run.workspace_id, plan: planFromRow(s) }, send, { idempotencyKey: `ai-reply:${run.message_id}` });
    if (isRefusal(accepted)) {
      // Refused by the send rules (the connection not connected, the month's messages used up).
      const code = refusalCode(accepted);
      log.warn({ error: code }, "AI run: the reply was refused by the send rules");
      await this.finish(run, { ...used, outcome: "vendor_error", error: `send_${code}` });
      return;
    }
    await this.finish(run, { ...used, replyMessageId: accepted.body.id }, {
      type: "ai.reply.sent",
      data: { run_id: run.id, message_id: run.message_id, reply_message_id: accepted.body.id, contact: run.contact },
    });
  }

  /** The policy, credential, connection and plan a run works with; null when the connection is gone. */
  private async setting(run: RunRow): Promise<RunSetting | null> {
    const [s] = await rows<RunSetting>(
      this.db,
      `SELECT c.slug, c.phone AS connection_phone, ap.mode, ap.model, ap.system_instruction, ap.max_context_bytes, ap.max_output_tokens,
              ap.monthly_cost_limit_micros, ap.input_cost_micros_per_million, ap.output_cost_micros_per_million,
              cr.id AS credential_id, cr.provider, cr.base_url, NULLIF(cr.api_key_sealed, '') AS api_key_sealed, ${PLAN_COLUMNS}
         FROM connections c
         JOIN workspaces w ON w.id = c.workspace_id
         JOIN plans p ON p.id = w.plan_id
         LEFT JOIN ai_policies ap ON ap.connection_id = c.id
         LEFT JOIN ai_credentials cr ON cr.id = ap.credential_id AND cr.workspace_id = c.workspace_id AND cr.deleted_at IS NULL
        WHERE c.id = $1`,
      [run.connection_id],
    );
    return s ?? null;
  }

  /** Whether someone wrote to the contact from the linked phone itself in the last 30 minutes. */
  private async humanActive(run: RunRow): Promise<boolean> {
    const found = await rows(
      this.db,
      `SELECT 1 FROM messages
        WHERE connection_id = $1 AND direction = 'outbound' AND recipient = to_jsonb($2::text) AND metadata @> $3::jsonb
          AND created_at > now() - $4 * interval '1 minute'
        LIMIT 1`,
      [run.connection_id, run.contact, JSON.stringify(PHONE_ORIGIN), HUMAN_ACTIVE_MINUTES],
    );
    return found.length > 0;
  }

  /**
   * The one-to-one conversation with the contact up to the message the run answers, newest first.
   * Messages that never reached anyone (scheduled, canceled, failed) are not part of it.
   */
  private async conversation(run: RunRow): Promise<ConversationMessage[]> {
    const found = await rows<{ direction: "inbound" | "outbound"; body: string | null; has_media: boolean; has_location: boolean; context_sensitivity: string | null }>(
      this.db,
      `SELECT direction, body, media IS NOT NULL AS has_media, location IS NOT NULL AS has_location, context_sensitivity
         FROM messages
        WHERE connection_id = $1
          AND created_at <= (SELECT created_at FROM messages WHERE id = $3)
          AND ((direction = 'inbound' AND sender = $2 AND jsonb_typeof(recipient) = 'string')
            OR (direction = 'outbound' AND recipient = to_jsonb($2::text) AND status NOT IN ('scheduled', 'canceled', 'failed')))
        ORDER BY created_at DESC, id DESC
        LIMIT $4`,
      [run.connection_id, run.contact, run.message_id, CONTEXT_MESSAGES],
    );
    return found.map((m) => ({ direction: m.direction, body: m.body, hasMedia: m.has_media, hasLocation: m.has_location, contextSensitivity: m.context_sensitivity }));
  }

  /**
   * The rate and cost ceilings, checked and the worst case reserved under the connection's lock
   * (two runs of one connection pass here one at a time). Answers the refusal, or null: the run
   * is now `calling` with its worst case counted in the month's cost.
   */
  private async reserve(run: RunRow, worstCase: bigint, limit: bigint | null, promptSha256: string): Promise<AiRunOutcome | null> {
    return this.db.transaction(async (em) => {
      await em.query(`SELECT pg_advisory_xact_lock(hashtextextended('ai-runs:' || $1, 0))`, [run.connection_id]);
      const [counted] = await rows<{ recent: number; month: string }>(
        em,
        `SELECT (SELECT count(*)::int FROM ai_runs
                  WHERE connection_id = $1 AND id <> $2 AND created_at > now() - interval '1 minute'
                    AND (state = 'calling' OR outcome IN ('drafted', 'replied', 'vendor_error'))) AS recent,
                (SELECT COALESCE(sum(cost_micros), 0)::text FROM ai_runs
                  WHERE connection_id = $1 AND id <> $2
                    AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS month`,
        [run.connection_id, run.id],
      );
      if (counted!.recent >= AI_RUNS_PER_MINUTE) return "rate_limited";
      if (limit !== null && (limit === 0n || BigInt(counted!.month) + worstCase > limit)) return "cost_limit_reached";
      await em.query(`UPDATE ai_runs SET state = 'calling', cost_micros = $2, prompt_sha256 = $3 WHERE id = $1`, [run.id, worstCase.toString(), promptSha256]);
      return null;
    });
  }

  private async touchCredential(id: string): Promise<void> {
    await this.db.query(`UPDATE ai_credentials SET last_used_at = now() WHERE id = $1`, [id]);
  }

  /** The run's outcome, and its event when it has one, in one statement. */
  private async finish(run: RunRow, f: Finish, event?: { type: "ai.draft.created" | "ai.reply.sent"; data: Record<string, unknown> } | null): Promise<void> {
    const params: unknown[] = [
      run.id,
      f.outcome,
      f.error ?? null,
      f.promptSha256 === undefined ? null : f.promptSha256,
      f.inputTokens ?? 0,
      f.outputTokens ?? 0,
      f.costMicros === undefined ? null : f.costMicros.toString(),
      f.latencyMs ?? null,
      f.replyMessageId ?? null,
      f.promptSha256 === undefined,
    ];
    let eventSql = "";
    if (event) {
      const [slug] = await rows<{ slug: string }>(this.db, `SELECT slug FROM connections WHERE id = $1`, [run.connection_id]);
      const built = buildEvent({ workspaceId: run.workspace_id, type: event.type, connection: { id: run.connection_id, slug: slug?.slug ?? "" }, data: event.data });
      params.push(...eventParams(built));
      // Only when the run was still open: a run finished twice emits nothing the second time.
      eventSql = `, e AS (INSERT INTO events ${EVENT_INSERT_COLUMNS} SELECT $11, $12, $13, $14, $15::jsonb, $16 FROM r)`;
    }
    const [done] = await rows<{ count: string }>(
      this.db,
      `WITH r AS (
         UPDATE ai_runs SET state = 'done', outcome = $2, error = $3,
                            prompt_sha256 = CASE WHEN $10 THEN prompt_sha256 ELSE $4 END,
                            input_tokens = $5, output_tokens = $6, cost_micros = COALESCE($7::bigint, cost_micros),
                            latency_ms = $8, reply_message_id = $9, lease_until = NULL, finished_at = clock_timestamp()
          WHERE id = $1 AND state <> 'done'
          RETURNING id
       )${eventSql}
       SELECT count(*) FROM r`,
      params,
    );
    // Ids and codes only: never a text.
    if (Number(done?.count) > 0) this.logger.info({ ai_run_id: run.id, message_id: run.message_id, outcome: f.outcome, error: f.error ?? null }, "AI run recorded");
  }

  /** One page of the workspace's runs, newest first (GET /v1/ai/runs): never a text. */
  async list(workspaceId: string, key: Buffer, query: ListAiRunsQuery): Promise<AiRunList> {
    const fingerprint = filterFingerprint(`ai-runs:${workspaceId}`, { connection: query.connection });
    const before = query.cursor !== undefined ? decodeCursor(key, query.cursor, fingerprint) : undefined;
    const params: unknown[] = [workspaceId];
    const clauses = ["r.workspace_id = $1"];
    if (query.connection !== undefined) {
      params.push(query.connection);
      clauses.push(`r.connection_id = (SELECT id FROM connections WHERE workspace_id = $1 AND slug = $${params.length} AND deleted_at IS NULL)`);
    }
    if (before) {
      params.push(before.created_at, before.id);
      clauses.push(`(r.created_at, r.id) < ($${params.length - 1}::timestamptz, $${params.length})`);
    }
    params.push(query.limit + 1);
    const found = await rows<{
      id: string;
      slug: string;
      message_id: string;
      mode: AiMode;
      model: string;
      prompt_sha256: string | null;
      input_tokens: number;
      output_tokens: number;
      cost_micros: string;
      latency_ms: number | null;
      outcome: AiRunOutcome | null;
      error: string | null;
      created_at: Date;
      position_created_at: string;
    }>(
      this.db,
      `SELECT r.id, c.slug, r.message_id, r.mode, r.model, r.prompt_sha256, r.input_tokens, r.output_tokens, r.cost_micros, r.latency_ms,
              r.outcome, r.error, r.created_at, to_char(r.created_at AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS position_created_at
         FROM ai_runs r JOIN connections c ON c.id = r.connection_id
        WHERE ${clauses.join(" AND ")} AND r.state = 'done'
        ORDER BY r.created_at DESC, r.id DESC
        LIMIT $${params.length}`,
      params,
    );
    const page = found.slice(0, query.limit);
    const last = page[page.length - 1];
    const data: AiRun[] = page.map((r) => ({
      id: r.id,
      connection: r.slug,
      message_id: r.message_id,
      mode: r.mode,
      model: r.model,
      prompt_sha256: r.prompt_sha256,
      input_tokens: r.input_tokens,
      output_tokens: r.output_tokens,
      cost_micros: Number(r.cost_micros),
      latency_ms: r.latency_ms,
      outcome: r.outcome!,
      error: r.error,
      created_at: r.created_at.toISOString(),
    }));
    return { data, next_cursor: found.length > query.limit && last ? encodeCursor(key, { created_at: last.position_created_at, id: last.id }, fingerprint) : null };
  }
}
