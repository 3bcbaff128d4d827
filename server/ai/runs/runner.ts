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
//   3. builds the context (context.ts), calls the vendor (server/ai/vendor.ts) and, in draft mode,
//      records `ai.draft.created` with the outcome; in auto mode sends the reply through the
//      ordinary send path (Idempotency-Key `ai-reply:<inbound message id>`), then records
//      `ai.reply.sent`.
// A run whose holder died (its lease passed) is resumed from its state (states.ts, RESUME).
// The statements are the store's (store.ts).
//
// Nothing here logs a prompt, a completion or a message body: log lines carry ids and codes only.
import { createHash } from "node:crypto";
import type { DataSource } from "typeorm";
import type { AiProvider, AiRunList, ListAiRunsQuery, SendMessageBody } from "../../../contract/index.js";
import { planFromRow } from "../../auth/credentials.js";
import { cursorKey } from "../../http/cursor.js";
import type { Logger } from "../../logger.js";
import { refusalCode, type MessageSender } from "../../messages/send.js";
import { isRefusal } from "../../messages/store/send-rules.js";
import type { AllowList } from "../../outbound/address-policy.js";
import { decrypt } from "../../secrets.js";
import { callVendor, VendorError, vendorRequestBody, type VendorRequest } from "../vendor.js";
import { buildContext, utf8Bytes } from "./context.js";
import { costMicros, countedUsage, type Tokens } from "./cost.js";
import { RESUME } from "./states.js";
import { AiRunStore, type Finish, type RunEvent, type RunRow } from "./store.js";

export interface AiRunnerOptions {
  secretKey: Buffer;
  /** The outbound address policy's allow-list (OUTBOUND_ALLOW_PRIVATE). */
  allowPrivate: AllowList;
  /** The vendor call's one time bound, retries included (AI_VENDOR_TIMEOUT_S); default the vendor module's (30 s). */
  vendorTimeoutMs?: number;
  /** Counts a vendor answer that reported more tokens than the request allowed (the `/metrics` counter). */
  onUsageOverLimit?: (provider: AiProvider) => void;
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

export class AiRunner {
  private readonly store: AiRunStore;

  constructor(
    db: DataSource,
    private readonly sender: MessageSender,
    private readonly logger: Logger,
    private readonly options: AiRunnerOptions,
  ) {
    this.store = new AiRunStore(db, cursorKey(options.secretKey));
  }

  /**
   * The `ai.run` job of a (connection, contact): claims the due debounce row, if any, into a run,
   * then works on every unfinished run of the pair that no live process holds.
   */
  async runDue(connectionId: string, contact: string): Promise<void> {
    const claimed = await this.store.claim(connectionId, contact);
    if (claimed) await this.work(claimed);
    // Not due yet (a later message pushed it): make sure a job meets it, whatever clock ran this one early.
    else await this.store.jobAtDueTime(connectionId, contact);
    for (const run of await this.store.takeStale(connectionId, contact)) await this.work(run);
  }

  /** One page of the workspace's runs, newest first (GET /v1/ai/runs): never a text. */
  list(workspaceId: string, query: ListAiRunsQuery): Promise<AiRunList> {
    return this.store.list(workspaceId, query);
  }

  private async work(run: RunRow): Promise<void> {
    const log = this.logger.child({ ai_run_id: run.id, message_id: run.message_id });
    try {
      if (RESUME[run.state] === "finish_interrupted") await this.resumeCalling(run);
      else await this.fromStart(run, log);
    } catch (err) {
      // Left with its lease: once it passes, the job written with the lease resumes the run.
      log.error({ err }, "AI run failed; it is resumed when its lease passes");
      throw err;
    }
  }

  /** A run whose vendor call was cut by a crash: replied if its reply exists, else recorded. */
  private async resumeCalling(run: RunRow): Promise<void> {
    const reply = await this.store.replyOf(run);
    if (reply) {
      // Its tokens are unknown: the worst case reserved stays its cost.
      await this.finish(run, { outcome: "replied", replyMessageId: reply }, {
        type: "ai.reply.sent",
        data: { run_id: run.id, message_id: run.message_id, reply_message_id: reply, contact: run.contact },
      });
    } else {
      await this.finish(run, { outcome: "vendor_error", error: "interrupted" });
    }
  }

  private async fromStart(run: RunRow, log: Logger): Promise<void> {
    const s = await this.store.setting(run);
    if (!s || s.mode === null) {
      // The policy was removed since the claim: nothing to answer with.
      await this.finish(run, { outcome: "credential_missing", error: "policy_missing" });
      return;
    }
    if (!s.provider || !s.api_key_sealed) {
      await this.finish(run, { outcome: "credential_missing" });
      return;
    }
    if (await this.store.humanActive(run)) {
      await this.finish(run, { outcome: "human_active" });
      return;
    }

    const request: VendorRequest = {
      provider: s.provider,
      apiKey: decrypt(this.options.secretKey, s.api_key_sealed),
      baseUrl: s.base_url,
      model: s.model!,
      system: s.system_instruction!,
      messages: buildContext(s.system_instruction!, await this.store.conversation(run), s.max_context_bytes!),
      maxOutputTokens: s.max_output_tokens!,
    };
    const body = vendorRequestBody(request);
    const inPrice = BigInt(s.input_cost_micros_per_million!);
    const outPrice = BigInt(s.output_cost_micros_per_million!);
    // What is asked for caps what can be billed: the worst case reserved, and the most a run counts.
    const limit: Tokens = { inputTokens: utf8Bytes(body), outputTokens: request.maxOutputTokens };
    const worstCase = costMicros(limit.inputTokens, limit.outputTokens, inPrice, outPrice);
    const monthlyLimit = s.monthly_cost_limit_micros === null ? null : BigInt(s.monthly_cost_limit_micros);

    const refused = await this.store.reserve(run, worstCase, monthlyLimit, sha256Hex(body));
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
      if (err.requestBody !== null) await this.store.touchCredential(s.credential_id!);
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
    await this.store.touchCredential(s.credential_id!);
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

  /** The run's outcome, and its event when it has one (store.ts); logged once, when it was still open. */
  private async finish(run: RunRow, f: Finish, event?: RunEvent | null): Promise<void> {
    // Ids and codes only: never a text.
    if (await this.store.finish(run, f, event)) this.logger.info({ ai_run_id: run.id, message_id: run.message_id, outcome: f.outcome, error: f.error ?? null }, "AI run recorded");
  }
}
