// The sandbox engine: a simulated network behind the same engine interface as a real one, so that
// everything works and is testable with no phone (product.md, "The sandbox engine"). Its state is
// in its own tables; its reports reach the gateway over HTTP at the connection's callback URL, so
// the callback path under test is always the real one. The control API (control.ts) plays the
// other side: phones that scan, contacts, inbound messages, logouts and faults.
import type { DataSource } from "typeorm";
import type { Recipient } from "../../../contract/index.js";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import { randomToken, sha256 } from "../../secrets.js";
import { EngineError, type Engine, type EngineConnection, type NumberCheck, type OutboundMessage } from "../engine.js";
import { SandboxContact, SandboxSession, type Receipts } from "./entities.js";
import { CallbackOutbox, type CallbackUrlResolver } from "./outbox.js";
import { insertReportsSql, newProviderMessageId, reportRows, type QueuedReport } from "./reports.js";
import type { Faults } from "./schemas.js";
import { SandboxNetwork } from "./network.js";

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
}

export class SandboxEngine implements Engine {
  readonly name = SANDBOX_ENGINE;
  /** The other side of the simulated network, driven by the control API. */
  readonly network: SandboxNetwork;
  private readonly db: DataSource;
  private readonly outbox: CallbackOutbox;

  constructor(options: SandboxOptions) {
    this.db = options.db;
    this.outbox = new CallbackOutbox(options.db, options.logger, options.callbackUrlFor);
    this.network = new SandboxNetwork(options.db, () => this.outbox.wake());
  }

  async open(): Promise<void> {
    this.outbox.start();
  }

  async close(): Promise<void> {
    await this.outbox.stop();
  }

  /** A fresh opaque payload; it replaces the session's previous one, which no longer links. */
  async startPairing(connection: EngineConnection): Promise<{ payload: string }> {
    await this.latency();
    const payload = `svc-sandbox-pair:${randomToken(24)}`;
    await this.db.query(
      `INSERT INTO sandbox_sessions (connection_id, state, pairing_digest, running) VALUES ($1, 'pairing', $2, true)
       ON CONFLICT (connection_id) DO UPDATE SET pairing_digest = EXCLUDED.pairing_digest, updated_at = now(),
         state = CASE WHEN sandbox_sessions.state = 'linked' THEN 'linked' ELSE 'pairing' END`,
      [connection.id, sha256(payload)],
    );
    return { payload };
  }

  /**
   * Accepts the message and answers its provider id; the receipts follow as reports. A number
   * declared off the network is accepted too and then reported `failed` (`not_on_network`), the
   * way a real network answers a send to an unknown number: later, not at hand-off.
   */
  async send(connection: EngineConnection, message: OutboundMessage): Promise<{ providerMessageId: string }> {
    const { address, group } = recipientAddress(message.to);
    // What the network knows of this send, in one round trip: its faults, the sender's session
    // and the contact (none for a group, and none for an undeclared number).
    const [known] = await rows<Faults & { state: string | null; running: boolean | null; phone: string | null; on_network: boolean | null; receipts: Receipts | null }>(
      this.db,
      `SELECT COALESCE(f.fail_next_sends, 0) AS fail_next_sends, COALESCE(f.latency_ms, 0) AS latency_ms,
              COALESCE(f.duplicate_callbacks, false) AS duplicate_callbacks, s.state, s.running, s.phone, c.on_network, c.receipts
         FROM (SELECT 1) AS one
         LEFT JOIN sandbox_faults f ON true
         LEFT JOIN sandbox_sessions s ON s.connection_id = $1
         LEFT JOIN sandbox_contacts c ON c.phone = $2 AND NOT $3::boolean`,
      [connection.id, address, group],
    );
    const faults: Faults = known!;
    await sleep(faults.latency_ms);
    if (faults.fail_next_sends > 0 && (await this.network.takeInjectedFailure())) {
      throw new EngineError("sandbox fault injection: fail_next_sends", false);
    }
    if (known!.state !== "linked" || !known!.running) {
      throw new EngineError("the sandbox session is not linked or is stopped", false, "session_not_linked");
    }
    const session = { phone: known!.phone };
    const contact = known!.on_network === null ? null : { onNetwork: known!.on_network, receipts: known!.receipts! };
    const onNetwork = contact?.onNetwork ?? true;
    const providerMessageId = newProviderMessageId();
    const base = { type: "message.status" as const, message_id: message.messageId, provider_message_id: providerMessageId };
    const at = (i: number) => new Date(Date.now() + (i + 1) * RECEIPT_STEP_MS).toISOString();
    const reports: QueuedReport[] = onNetwork
      ? RECEIPTS[contact?.receipts ?? "read"].map((status, i) => ({
          connectionId: connection.id,
          delayMs: (i + 1) * RECEIPT_STEP_MS,
          report: { ...base, status, timestamp: at(i) },
        }))
      : [
          {
            connectionId: connection.id,
            delayMs: RECEIPT_STEP_MS,
            report: { ...base, status: "failed", error: { code: "not_on_network", message: `${address} is not on the network` }, timestamp: at(0) },
          },
        ];
    // One statement: the delivery and its reports exist together or not at all. A retried hand-off
    // of the same message conflicts on message_id and queues nothing.
    const inserted: { provider_message_id: string }[] = await this.db.query(
      `WITH d AS (
         INSERT INTO sandbox_deliveries (message_id, provider_message_id, connection_id, from_phone, to_address, recipient, body, media, location, outcome)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb, $9::jsonb, $10)
         ON CONFLICT (message_id) DO NOTHING
         RETURNING provider_message_id
       ), r AS (
         ${insertReportsSql("$11")} WHERE EXISTS (SELECT 1 FROM d)
       )
       SELECT provider_message_id FROM d`,
      [
        message.messageId,
        providerMessageId,
        connection.id,
        session.phone,
        address,
        JSON.stringify(message.to),
        message.body,
        message.media ? JSON.stringify(message.media) : null,
        message.location ? JSON.stringify(message.location) : null,
        onNetwork ? "delivered" : "not_on_network",
        reportRows(reports, faults.duplicate_callbacks),
      ],
    );
    if (inserted[0]) {
      this.outbox.wake();
      return { providerMessageId: inserted[0].provider_message_id };
    }
    const [earlier] = (await this.db.query(`SELECT provider_message_id FROM sandbox_deliveries WHERE message_id = $1`, [message.messageId])) as {
      provider_message_id: string;
    }[];
    if (!earlier) throw new EngineError("the sandbox lost a concurrent hand-off of this message; retry", false);
    return { providerMessageId: earlier.provider_message_id };
  }

  async checkNumber(connection: EngineConnection, phone: string): Promise<NumberCheck> {
    await this.latency();
    const session = await this.db.getRepository(SandboxSession).findOneBy({ connectionId: connection.id });
    if (session?.state !== "linked" || !session.running) return { checked: false, onNetwork: null };
    const contact = await this.db.getRepository(SandboxContact).findOneBy({ phone });
    return { checked: true, onNetwork: contact?.onNetwork ?? true };
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

function recipientAddress(to: Recipient): { address: string; group: boolean } {
  if (typeof to === "string") return { address: to, group: false };
  return "group" in to ? { address: to.group, group: true } : { address: to.phone, group: false };
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
