// The sandbox engine: a simulated network behind the same engine interface as a real one, so that
// everything works and is testable with no phone (docs/engines.md, "The sandbox engine"). Its state is
// in its own tables; its reports reach the gateway over HTTP at the connection's callback URL, so
// the callback path under test is always the real one, except a send's receipts when the gateway
// runs in this process: those are applied in process (receipts.ts). The control API (control.ts) plays the
// other side: phones that scan, contacts, inbound messages, logouts and faults.
import { randomBytes } from "node:crypto";
import type { DataSource } from "typeorm";
import type { Media, MessageStatus, PresenceState, Recipient } from "../../../contract/index.js";
import type { DatabaseListener } from "../../db/listener.js";
import { prepared } from "../../db/prepared.js";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import { randomToken, sha256 } from "../../secrets.js";
import { EMPTY_ALLOW_LIST, type UrlCheckOptions } from "../../outbound/address-policy.js";
import { EngineError, type Engine, type EngineConnection, type MediaDownload, type MessageRef, type NumberCheck, type OutboundMessage, type PairingRequest } from "../engine.js";
import { recipientAddress, SandboxConversations } from "./conversations.js";
import { SandboxContact, SandboxSession, type Receipts } from "./entities.js";
import { CallbackOutbox, type CallbackUrlResolver } from "./outbox.js";
import { insertReportsSql, newProviderMessageId, reportRows, type QueuedReport } from "./reports.js";
import { InProcessReceipts, OWED_DELIVERIES_SQL, receipt, type ApplyReports, type OwedDelivery } from "./receipts.js";
import type { Faults } from "./schemas.js";
import { pairingCodeDigest, SandboxNetwork } from "./network.js";
import { SandboxGroups } from "./groups.js";

export const SANDBOX_ENGINE = "sandbox";
/** Receipts follow a send this many milliseconds apart: sent, then delivered, then read. */
const RECEIPT_STEP_MS = 30;

const RECEIPTS: Record<Receipts, ("sent" | "delivered" | "read")[]> = {
  read: ["sent", "delivered", "read"],
  delivered: ["sent", "delivered"],
  none: ["sent"],
};

export interface SandboxOptions {
  db: DataSource;
  logger: Logger;
  /** Where a connection's reports go (the sandbox keeps no URLs: they carry credentials). */
  callbackUrlFor: CallbackUrlResolver;
  /** The outbound address policy media are fetched through; default: public addresses only. */
  mediaPolicy?: UrlCheckOptions;
  /**
   * The gateway's callback service in this process: a send's receipts are applied through it
   * directly (receipts.ts). Absent: every report goes over HTTP.
   */
  applyReports?: ApplyReports;
  /** This process's LISTEN connection: the outbox sleeps until its next report is due rather than polling. */
  listener?: DatabaseListener;
}

export class SandboxEngine implements Engine {
  readonly name = SANDBOX_ENGINE;
  /** The other side of the simulated network, driven by the control API. */
  readonly network: SandboxNetwork;
  readonly groups: SandboxGroups;
  private readonly db: DataSource;
  private readonly outbox: CallbackOutbox;
  private readonly conversations: SandboxConversations;
  private readonly receipts: InProcessReceipts | null;

  constructor(options: SandboxOptions) {
    this.db = options.db;
    this.receipts = options.applyReports ? new InProcessReceipts(options.db, options.logger, options.applyReports) : null;
    this.conversations = new SandboxConversations(options.db, options.mediaPolicy ?? { allowPrivate: EMPTY_ALLOW_LIST });
    this.outbox = new CallbackOutbox(options.db, options.logger, options.callbackUrlFor, options.listener);
    this.network = new SandboxNetwork(options.db, () => this.outbox.wake());
    this.groups = new SandboxGroups(options.db, () => this.latency(), () => this.outbox.wake());
  }

  async open(): Promise<void> {
    this.outbox.start();
    this.receipts?.start();
  }

  /** Receipts not yet applied go to the outbox's table first, for whichever process posts next. */
  async close(): Promise<void> {
    await this.receipts?.stop();
    await this.outbox.stop();
  }

  /**
   * A fresh opaque payload to scan, or a code that links only when typed on the phone of
   * `request.phone` (as on the real network); it replaces the session's previous one, which no
   * longer links.
   */
  async startPairing(connection: EngineConnection, request: PairingRequest): Promise<{ payload: string }> {
    await this.latency();
    const payload = request.method === "code" ? newPairingCode() : `svc-sandbox-pair:${randomToken(24)}`;
    const digest = request.method === "code" ? pairingCodeDigest(payload, request.phone) : sha256(payload);
    await this.db.query(
      `INSERT INTO sandbox_sessions (connection_id, state, pairing_digest, running) VALUES ($1, 'pairing', $2, true)
       ON CONFLICT (connection_id) DO UPDATE SET pairing_digest = EXCLUDED.pairing_digest, updated_at = now(),
         state = CASE WHEN sandbox_sessions.state = 'linked' THEN 'linked' ELSE 'pairing' END`,
      [connection.id, digest],
    );
    return { payload };
  }

  /**
   * Accepts the message and answers its provider id; the receipts follow as reports. A number
   * declared off the network is accepted too and then reported `failed` (`not_on_network`), the
   * way a real network answers a send to an unknown number: later, not at hand-off.
   */
  async send(connection: EngineConnection, message: OutboundMessage): Promise<{ providerMessageId: string }> {
    const [outcome] = await this.sendMany(connection, [message]);
    if (outcome instanceof EngineError) throw outcome;
    return outcome!;
  }

  /** Several messages of one connection, in their order, in two round trips (send() is this for one). */
  async sendMany(connection: EngineConnection, messages: OutboundMessage[]): Promise<({ providerMessageId: string } | EngineError)[]> {
    const addresses = messages.map((m) => recipientAddress(m.to));
    // What the network knows of these sends, in one round trip: its faults, the sender's session
    // and the contacts (none for a group, and none for an undeclared number).
    const [known] = await prepared<Faults & { state: string | null; running: boolean | null; phone: string | null; contacts: Record<string, { on_network: boolean; receipts: Receipts }> | null }>(
      this.db,
      "sandbox-send-known",
      `SELECT COALESCE(f.fail_next_sends, 0) AS fail_next_sends, COALESCE(f.latency_ms, 0) AS latency_ms,
              COALESCE(f.duplicate_callbacks, false) AS duplicate_callbacks, s.state, s.running, s.phone,
              (SELECT jsonb_object_agg(c.phone, jsonb_build_object('on_network', c.on_network, 'receipts', c.receipts))
                 FROM sandbox_contacts c WHERE c.phone = ANY($2::text[])) AS contacts
         FROM (SELECT 1) AS one
         LEFT JOIN sandbox_faults f ON true
         LEFT JOIN sandbox_sessions s ON s.connection_id = $1`,
      [connection.id, addresses.filter((a) => !a.group).map((a) => a.address)],
    );
    const faults: Faults = known!;
    await sleep(faults.latency_ms);
    const outcomes: ({ providerMessageId: string } | EngineError)[] = [];
    const deliveries: Record<string, unknown>[] = [];
    const reports: QueuedReport[] = [];
    let injecting = faults.fail_next_sends > 0;
    // Duplicated callbacks are a fault of the HTTP path: under it, receipts take that path too.
    const inProcess = this.receipts !== null && !faults.duplicate_callbacks;
    for (const [i, message] of messages.entries()) {
      if (injecting && (injecting = await this.network.takeInjectedFailure())) {
        outcomes[i] = new EngineError("sandbox fault injection: fail_next_sends", false);
        continue;
      }
      if (known!.state !== "linked" || !known!.running) {
        outcomes[i] = new EngineError("the sandbox session is not linked or is stopped", false, "session_not_linked");
        continue;
      }
      const { address, group } = addresses[i]!;
      const contact = group ? undefined : known!.contacts?.[address];
      const onNetwork = contact?.on_network ?? true;
      const providerMessageId = newProviderMessageId();
      const statuses: MessageStatus[] = onNetwork ? RECEIPTS[contact?.receipts ?? "read"] : ["failed"];
      statuses.forEach((status, k) => {
        const delayMs = (k + 1) * RECEIPT_STEP_MS;
        reports.push({ connectionId: connection.id, delayMs, report: receipt(message.messageId, providerMessageId, address, status, new Date(Date.now() + delayMs)) });
      });
      deliveries.push({
        message_id: message.messageId, provider_message_id: providerMessageId, from_phone: known!.phone, to_address: address,
        recipient: message.to, body: message.body, media: message.media, location: message.location,
        quoted_message_id: message.quoted?.messageId ?? null, poll: message.poll ?? null,
        outcome: onNetwork ? "delivered" : "not_on_network", reports: inProcess ? statuses : null,
      });
    }
    if (!deliveries.length) return outcomes;
    // One statement: each delivery and its reports (queued, or named in the delivery when they are
    // applied in process) exist together or not at all. A retried hand-off of the same message
    // conflicts on message_id and reports nothing.
    const inserted = await prepared<{ message_id: string; provider_message_id: string }>(
      this.db,
      inProcess ? "sandbox-deliver" : "sandbox-deliver-queued",
      `WITH d AS (
         INSERT INTO sandbox_deliveries (message_id, provider_message_id, connection_id, from_phone, to_address, recipient, body, media, location,
                                         quoted_message_id, poll, outcome, reports)
         SELECT message_id, provider_message_id, $1, from_phone, to_address, recipient, body, media, location, quoted_message_id, poll, outcome, reports
           FROM jsonb_to_recordset($2::jsonb) AS x(message_id text, provider_message_id text, from_phone text, to_address text,
                                                   recipient jsonb, body text, media jsonb, location jsonb, quoted_message_id text,
                                                   poll jsonb, outcome text, reports text[])
         ON CONFLICT (message_id) DO NOTHING
         RETURNING message_id, provider_message_id
       )${inProcess ? "" : `, r AS (
         ${insertReportsSql("$3")} WHERE r.event->>'message_id' IN (SELECT message_id FROM d)
       )`}
       SELECT message_id, provider_message_id FROM d`,
      [connection.id, JSON.stringify(deliveries), ...(inProcess ? [] : [reportRows(reports, faults.duplicate_callbacks)])],
    ).catch((err: unknown) => {
      // Committed or not, nobody can tell yet: the receipts follow if it did.
      if (inProcess) this.receipts!.checkLater(deliveries.map((d) => d.message_id as string));
      throw err;
    });
    const ids = new Map(inserted.map((r) => [r.message_id, r.provider_message_id]));
    if (inserted.length) {
      if (inProcess) this.receipts!.schedule(reports.filter((r) => ids.has((r.report as { message_id: string }).message_id)));
      else this.outbox.wake();
    }
    const missing = deliveries.map((d) => d.message_id as string).filter((id) => !ids.has(id));
    if (missing.length) {
      // Handed off before (a retry after a crash, or after the first answer was lost): the same
      // provider id, nothing sent again, and the receipts it still owes, which no one may hold.
      const earlier = await rows<OwedDelivery>(this.db, OWED_DELIVERIES_SQL, [missing]);
      for (const e of earlier) ids.set(e.message_id, e.provider_message_id);
      this.receipts?.resume(earlier);
    }
    for (const [i, message] of messages.entries()) {
      if (outcomes[i]) continue;
      const providerMessageId = ids.get(message.messageId);
      outcomes[i] = providerMessageId
        ? { providerMessageId }
        : new EngineError("the sandbox lost a concurrent hand-off of this message; retry", false);
    }
    return outcomes;
  }

  async checkNumber(connection: EngineConnection, phone: string): Promise<NumberCheck> {
    await this.latency();
    const session = await this.db.getRepository(SandboxSession).findOneBy({ connectionId: connection.id });
    if (session?.state !== "linked" || !session.running) return { checked: false, onNetwork: null };
    const contact = await this.db.getRepository(SandboxContact).findOneBy({ phone });
    return { checked: true, onNetwork: contact?.onNetwork ?? true };
  }

  react(connection: EngineConnection, target: MessageRef, emoji: string): Promise<void> {
    return this.conversations.react(connection, target, emoji);
  }

  edit(connection: EngineConnection, target: MessageRef, body: string): Promise<void> {
    return this.conversations.edit(connection, target, body);
  }

  revoke(connection: EngineConnection, target: MessageRef): Promise<void> {
    return this.conversations.revoke(connection, target);
  }

  markRead(connection: EngineConnection, targets: MessageRef[]): Promise<void> {
    return this.conversations.markRead(connection, targets);
  }

  sendPresence(connection: EngineConnection, chat: Recipient, state: PresenceState): Promise<void> {
    return this.conversations.sendPresence(connection, chat, state);
  }

  async downloadMedia(_connection: EngineConnection, _target: MessageRef, media: Media, maxBytes: number): Promise<MediaDownload> {
    await this.latency();
    return this.conversations.downloadMedia(media, maxBytes);
  }

  /** The gateway deleted the connection: forget the session and every report still owed for it. */
  async logout(connection: EngineConnection): Promise<void> {
    await this.latency();
    await this.db.query(
      `WITH c AS (DELETE FROM sandbox_callbacks WHERE connection_id = $1) DELETE FROM sandbox_sessions WHERE connection_id = $1`,
      [connection.id],
    );
  }

  async stop(connection: EngineConnection): Promise<void> {
    await this.latency();
    await this.db.query(`UPDATE sandbox_sessions SET running = false, updated_at = now() WHERE connection_id = $1`, [connection.id]);
  }

  async start(connection: EngineConnection): Promise<void> {
    await this.latency();
    await this.db.query(`UPDATE sandbox_sessions SET running = true, updated_at = now() WHERE connection_id = $1`, [connection.id]);
    this.outbox.wake();
  }

  private async latency(): Promise<void> {
    const faults: Faults = await this.network.faults();
    await sleep(faults.latency_ms);
  }
}

/** The network's pairing-code alphabet (no 0, I, O, U: nothing to misread) and its shape, ABCD-EFGH. */
const CODE_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTVWXYZ";

function newPairingCode(): string {
  const chars = [...randomBytes(8)].map((b) => CODE_ALPHABET[b % CODE_ALPHABET.length]!).join("");
  return `${chars.slice(0, 4)}-${chars.slice(4)}`;
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
