// A send's receipts when the gateway that runs the sandbox is in this process (docs/decisions.md,
// "Connections and the sandbox"): kept in memory until due, then applied through the gateway's
// callback service directly, a connection's due receipts in one transaction, instead of a row
// each in `sandbox_callbacks` posted over HTTP and deduplicated on arrival. What makes this
// durable is the delivery row (`sandbox_deliveries.reports`, written with the send): receipts
// that a process did not apply before it died are found by the sweep of any process (at start,
// then every SWEEP_MS) and applied then. Status reports move a message forward only, so a receipt
// applied twice (a sweep racing a slow process) changes nothing the second time.
//
// A stopped (suspended) session holds its reports: receipts that fall due while it is stopped go
// to `sandbox_callbacks`, which posts them once it runs again, as it does every other report.
import type { DataSource } from "typeorm";
import type { MessageStatus, ProviderEvent } from "../../../contract/index.js";
import { backoffMs } from "../../backoff.js";
import { isDatabaseUnavailable } from "../../db/availability.js";
import { rows } from "../../db/rows.js";
import { ApiError } from "../../http/errors.js";
import type { Logger } from "../../logger.js";
import { rank } from "../../messages/status.js";
import { insertReportsSql, newEventId, reportRows, type QueuedReport } from "./reports.js";

/** Applies a connection's reports in one transaction (ProviderCallbackService.handleInProcess). */
export type ApplyReports = (connectionId: string, events: ProviderEvent[]) => Promise<unknown>;

/** How often a process looks for receipts that another (dead) process owed. */
const SWEEP_MS = 10_000;
/** A delivery this old whose receipts are not all applied was left by a process that died. */
const SETTLE_MS = 10_000;
/** The periodic sweep looks this far back; the sweep at start looks at everything. */
const SWEEP_WINDOW_MS = 15 * 60_000;
const RETRY_MAX_MS = 5_000;
/** First look at hand-offs whose delivery statement failed uncertainly. */
const CHECK_MS = 250;
/** After this many failed attempts (about eight minutes) receipts are dropped and logged, as the callback outbox drops a report. */
const MAX_ATTEMPTS = 100;

/** A delivery with its message's status (OwedDelivery), for the deliveries `$1` names. */
export const OWED_DELIVERIES_SQL = `SELECT d.message_id, d.provider_message_id, d.connection_id, d.to_address, d.reports, m.status
   FROM sandbox_deliveries d LEFT JOIN messages m ON m.id = d.message_id WHERE d.message_id = ANY($1)`;

/** Statuses a message may still move on from by the network's receipts. */
const RESUMABLE: readonly MessageStatus[] = ["submitting", "submitted", "sent", "delivered"];

/** A delivery and where its message is: the planned receipts (null: they took the outbox) and the status. */
export interface OwedDelivery {
  connection_id: string;
  message_id: string;
  provider_message_id: string;
  to_address: string;
  reports: MessageStatus[] | null;
  status: MessageStatus | null;
}

interface Pending {
  connectionId: string;
  messageId: string;
  dueAt: number;
  event: ProviderEvent;
  attempts: number;
}

export class InProcessReceipts {
  /** Due order; a connection's receipts keep their order within it. */
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private running = false;
  private ticking: Promise<void> | undefined;
  /** Hand-offs whose delivery statement failed without saying whether it committed. */
  private uncertain = new Set<string>();
  private checkTimer: NodeJS.Timeout | undefined;
  private checkAttempts = 0;
  /** Messages whose receipts are being applied right now (out of `pending`, not yet written). */
  private readonly applying = new Set<string>();

  constructor(
    private readonly db: DataSource,
    private readonly logger: Logger,
    private readonly apply: ApplyReports,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.sweep(null);
    this.arm();
  }

  /** Stops applying; receipts not yet applied are written to `sandbox_callbacks` for whichever process posts next. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    clearTimeout(this.sweepTimer);
    clearTimeout(this.checkTimer);
    await this.ticking;
    const left = this.pending;
    this.pending = [];
    // Unwritten (the database is away), they are still owed by their delivery rows: another
    // process's sweep, or this one's at its next start, applies them.
    if (left.length) await this.hold(left).catch((err: unknown) => this.logger.warn({ err, receipts: left.length }, "sandbox receipts left to the sweep"));
  }

  /** Receipts of deliveries just committed. */
  schedule(reports: QueuedReport[]): void {
    const now = Date.now();
    for (const r of reports) {
      this.pending.push({
        connectionId: r.connectionId,
        messageId: (r.report as { message_id: string }).message_id,
        dueAt: now + (r.delayMs ?? 0),
        event: { ...r.report, event_id: newEventId() } as ProviderEvent,
        attempts: 0,
      });
    }
    this.pending.sort((a, b) => a.dueAt - b.dueAt);
    this.arm();
  }

  private arm(): void {
    if (!this.running || this.ticking || !this.pending.length) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.logger.error({ err }, "sandbox receipts failed"))
        .finally(() => {
          this.ticking = undefined;
          this.arm();
        });
    }, Math.max(0, this.pending[0]!.dueAt - Date.now()));
  }

  /**
   * Applies what is due, a connection's receipts in one transaction, connections side by side.
   * Ticks never overlap, so a connection's receipts are applied in their order.
   */
  private async tick(): Promise<void> {
    const now = Date.now();
    const due = new Map<string, Pending[]>();
    const later: Pending[] = [];
    for (const p of this.pending) {
      if (p.dueAt > now) later.push(p);
      else {
        const of = due.get(p.connectionId);
        if (of) of.push(p);
        else due.set(p.connectionId, [p]);
      }
    }
    this.pending = later;
    if (!due.size) return;
    let running: Set<string>;
    try {
      const found = await rows<{ connection_id: string }>(this.db, `SELECT connection_id FROM sandbox_sessions WHERE connection_id = ANY($1) AND running`, [[...due.keys()]]);
      running = new Set(found.map((r) => r.connection_id));
    } catch (err) {
      this.retry([...due.values()].flat(), err);
      return;
    }
    const held: Pending[] = [];
    await Promise.all(
      [...due].map(async ([connectionId, receipts]) => {
        if (!running.has(connectionId)) {
          held.push(...receipts);
          return;
        }
        for (const r of receipts) this.applying.add(r.messageId);
        try {
          await this.apply(connectionId, receipts.map((r) => r.event));
        } catch (err) {
          // Gone, or moved to another engine: its receipts are nobody's now.
          if (!(err instanceof ApiError && err.status === 404)) this.retry(receipts, err);
        } finally {
          for (const r of receipts) this.applying.delete(r.messageId);
        }
      }),
    );
    if (held.length) await this.hold(held).catch((err: unknown) => this.retry(held, err));
  }

  /** Back in line after a failure (a database outage, a deadlock), with a backoff. */
  private retry(receipts: Pending[], err: unknown): void {
    const attempts = Math.max(...receipts.map((r) => r.attempts)) + 1;
    if (attempts >= MAX_ATTEMPTS) {
      this.logger.error({ err, receipts: receipts.length, connection_id: receipts[0]!.connectionId }, "sandbox dropped receipts after repeated failures");
      return;
    }
    if (!isDatabaseUnavailable(err)) this.logger.warn({ err, receipts: receipts.length }, "sandbox receipts not applied; retrying");
    const at = Date.now() + backoffMs(attempts, 100, RETRY_MAX_MS, { jitter: 0 });
    for (const r of receipts) Object.assign(r, { attempts, dueAt: at });
    this.pending.push(...receipts);
    this.pending.sort((a, b) => a.dueAt - b.dueAt);
  }

  /** To the callback outbox, which holds a stopped session's reports until it runs again. */
  private async hold(receipts: Pending[]): Promise<void> {
    const queued: QueuedReport[] = receipts.map((r) => {
      const { event_id: _id, ...report } = r.event;
      return { connectionId: r.connectionId, report: report as QueuedReport["report"] };
    });
    await this.db.query(insertReportsSql("$1"), [reportRows(queued, false)]);
  }

  /**
   * The delivery statement of these messages failed (a lost connection, an outage): it may have
   * committed, with receipts that nothing else schedules until the sweep. Once the database
   * answers, those that exist get them; the others were not delivered and are handed off again.
   */
  checkLater(messageIds: string[]): void {
    for (const id of messageIds) this.uncertain.add(id);
    if (this.running && !this.checkTimer) this.checkTimer = setTimeout(() => void this.check(), CHECK_MS);
  }

  private async check(): Promise<void> {
    const ids = [...this.uncertain];
    try {
      this.resume(await rows<OwedDelivery>(this.db, OWED_DELIVERIES_SQL, [ids]));
      for (const id of ids) this.uncertain.delete(id);
      this.checkAttempts = 0;
    } catch (err) {
      if (!isDatabaseUnavailable(err)) this.logger.warn({ err }, "sandbox receipts: checking uncertain hand-offs failed");
      this.checkAttempts++;
    }
    this.checkTimer = undefined;
    if (this.running && this.uncertain.size) {
      this.checkTimer = setTimeout(() => void this.check(), backoffMs(this.checkAttempts, CHECK_MS, RETRY_MAX_MS, { jitter: 0 }));
    }
  }

  /**
   * Schedules, due now, the receipts of these deliveries that their messages have not reached,
   * except for messages this process holds receipts of already; returns how many. For the sweep,
   * and for a hand-off repeated after its first answer was lost (the delivery committed, its
   * receipts were never scheduled).
   */
  resume(deliveries: OwedDelivery[]): number {
    const mine = new Set([...this.pending.map((p) => p.messageId), ...this.applying]);
    const reports: QueuedReport[] = [];
    const now = new Date();
    for (const d of deliveries) {
      if (!d.reports || !d.status || mine.has(d.message_id) || !RESUMABLE.includes(d.status)) continue;
      for (const status of d.reports) {
        if (rank(status) > rank(d.status)) reports.push({ connectionId: d.connection_id, report: receipt(d.message_id, d.provider_message_id, d.to_address, status, now) });
      }
    }
    if (reports.length) this.schedule(reports);
    return reports.length;
  }

  /**
   * Receipts owed for deliveries older than SETTLE_MS whose messages have not reached what their
   * reports say (a process died first), skipping what this process holds in memory or what waits
   * in `sandbox_callbacks`: each is scheduled now. `since` null looks at every delivery.
   */
  private async sweep(since: number | null): Promise<void> {
    try {
      const owed = await rows<OwedDelivery>(
        this.db,
        `SELECT d.connection_id, d.message_id, d.provider_message_id, d.to_address, d.reports, m.status
           FROM sandbox_deliveries d JOIN messages m ON m.id = d.message_id
          WHERE d.reports IS NOT NULL AND d.created_at < now() - $1::int * interval '1 millisecond'
            AND ($2::int IS NULL OR d.created_at > now() - $2::int * interval '1 millisecond')
            AND m.status = ANY($3::text[]) AND m.status <> d.reports[cardinality(d.reports)]
            AND NOT EXISTS (SELECT 1 FROM sandbox_callbacks c WHERE c.connection_id = d.connection_id AND c.event->>'message_id' = d.message_id)`,
        [SETTLE_MS, since, RESUMABLE],
      );
      const resumed = this.resume(owed);
      if (resumed) this.logger.info({ receipts: resumed }, "sandbox receipts owed by a process that stopped: applying them");
    } catch (err) {
      if (!isDatabaseUnavailable(err)) this.logger.error({ err }, "sandbox receipts sweep failed");
    }
    if (this.running) this.sweepTimer = setTimeout(() => void this.sweep(SWEEP_WINDOW_MS), SWEEP_MS);
  }
}

/** The report of one receipt: `failed` is the network's answer to a number that is not on it. */
export function receipt(messageId: string, providerMessageId: string, address: string, status: MessageStatus, at: Date): QueuedReport["report"] {
  const base = { type: "message.status" as const, message_id: messageId, provider_message_id: providerMessageId, timestamp: at.toISOString() };
  if (status === "failed") return { ...base, status, error: { code: "not_on_network", message: `${address} is not on the network` } };
  return { ...base, status: status as "sent" | "delivered" | "read" };
}
