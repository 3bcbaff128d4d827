// The statements of AI runs: claiming a due debounce row into a run, taking over runs whose lease
// passed, reading what a run works with, reserving its worst case under the connection's lock,
// recording its outcome with its event, and the runs' list. Every statement that leases a run
// writes the `ai.run` job that resumes it (docs/decisions.md, "The job outbox").
import type { DataSource } from "typeorm";
import type { AiMode, AiProvider, AiRun, AiRunList, AiRunOutcome, ListAiRunsQuery } from "../../../contract/index.js";
import { AI_RUN_JOB } from "../../../jobs/names.js";
import { PLAN_COLUMNS, type PlanRow } from "../../auth/credentials.js";
import { MICROSECOND_INSTANT } from "../../db/instant.js";
import { rows } from "../../db/rows.js";
import { buildEvent, eventParams, insertEvents } from "../../events/record.js";
import { decodeCursor, encodeCursor, filterFingerprint } from "../../http/cursor.js";
import { newId } from "../../ids.js";
import { PHONE_ORIGIN } from "../../messages/store/reports.js";
import type { ConversationMessage } from "./context.js";
import { AI_RUN_LEASE_MS, AI_RUNS_PER_MINUTE, HUMAN_ACTIVE_MINUTES, type OpenState, type Refusal } from "./states.js";

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

/** An unfinished run held by this process. */
export interface RunRow {
  id: string;
  workspace_id: string;
  connection_id: string;
  message_id: string;
  contact: string;
  state: OpenState;
  cost_micros: string;
}

/** The policy, credential, connection and plan a run works with. */
export interface RunSetting extends PlanRow {
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

/** How a run ends: its outcome and what it used. */
export type Finish = {
  outcome: AiRunOutcome;
  error?: string | null;
  promptSha256?: string | null;
  inputTokens?: number;
  outputTokens?: number;
  costMicros?: bigint;
  latencyMs?: number | null;
  replyMessageId?: string | null;
};

/** The event a finished run records with its outcome. */
export type RunEvent = { type: "ai.draft.created" | "ai.reply.sent"; data: Record<string, unknown> };

const RUN_COLUMNS = `id, workspace_id, connection_id, message_id, contact, state, cost_micros`;

export class AiRunStore {
  constructor(
    private readonly db: DataSource,
    /** Signs the run list's cursors. */
    private readonly cursorKey: Buffer,
  ) {}

  /**
   * The due debounce row → a pending run held by this process, in one statement; null when none is
   * due (or the policy was disabled, or the plan no longer includes AI: the row is dropped then).
   */
  async claim(connectionId: string, contact: string): Promise<RunRow | null> {
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

  /** A job that meets the pair's debounce row at its due time (a later message pushed it). */
  async jobAtDueTime(connectionId: string, contact: string): Promise<void> {
    await this.db.query(
      `INSERT INTO job_outbox (name, data, run_at)
       SELECT $3, jsonb_build_object('connection_id', connection_id, 'contact', contact), due_at FROM ai_debounce WHERE connection_id = $1 AND contact = $2`,
      [connectionId, contact, AI_RUN_JOB],
    );
  }

  /** The pair's unfinished runs whose lease has passed, now held by this process (with the job that resumes them should it die). */
  takeStale(connectionId: string, contact: string): Promise<RunRow[]> {
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

  /** The reply a run sent, if any (its metadata names the run). */
  async replyOf(run: RunRow): Promise<string | null> {
    const [reply] = await rows<{ id: string }>(
      this.db,
      `SELECT id FROM messages WHERE connection_id = $1 AND direction = 'outbound' AND metadata->>'ai_run_id' = $2 LIMIT 1`,
      [run.connection_id, run.id],
    );
    return reply?.id ?? null;
  }

  /** The policy, credential, connection and plan a run works with; null when the connection is gone. */
  async setting(run: RunRow): Promise<RunSetting | null> {
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
  async humanActive(run: RunRow): Promise<boolean> {
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
  async conversation(run: RunRow): Promise<ConversationMessage[]> {
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
  async reserve(run: RunRow, worstCase: bigint, limit: bigint | null, promptSha256: string): Promise<Refusal | null> {
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

  async touchCredential(id: string): Promise<void> {
    await this.db.query(`UPDATE ai_credentials SET last_used_at = now() WHERE id = $1`, [id]);
  }

  /** The run's outcome, and its event when it has one, in one statement. False: it was finished already. */
  async finish(run: RunRow, f: Finish, event?: RunEvent | null): Promise<boolean> {
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
      eventSql = `, e AS (${insertEvents(`SELECT $11, $12, $13, $14, $15::jsonb, $16 FROM r`)})`;
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
    return Number(done?.count) > 0;
  }

  /** One page of the workspace's runs, newest first (GET /v1/ai/runs): never a text. */
  async list(workspaceId: string, query: ListAiRunsQuery): Promise<AiRunList> {
    const fingerprint = filterFingerprint(`ai-runs:${workspaceId}`, { connection: query.connection });
    const before = query.cursor !== undefined ? decodeCursor(this.cursorKey, query.cursor, fingerprint) : undefined;
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
    return { data, next_cursor: found.length > query.limit && last ? encodeCursor(this.cursorKey, { created_at: last.position_created_at, id: last.id }, fingerprint) : null };
  }
}
