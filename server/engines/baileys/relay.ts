// Sends handed off on a gateway process that does not hold the connection's socket: the message is
// written to baileys_outbox and the hand-off answers at once with the network id derived from ours
// (the dispatcher records `submitted`); the holder writes it to its socket at its next lease poll,
// at the connection's pace, and removes the row only afterwards. A holder that dies in between
// leaves the row to the next holder, which writes the same network id again (one message on the
// network). A permanent failure is reported as `failed`; a transient one is retried at later polls.
import type { DataSource } from "typeorm";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import { EngineError, type OutboundMessage } from "../engine.js";
import type { Report, Session } from "./session.js";
import { networkMessageId } from "./translate.js";

/** Relay attempts of one message before it is reported failed. */
export const RELAY_ATTEMPTS = 10;
const RELAY_BATCH = 100;

export class Relay {
  private draining = false;

  constructor(
    private readonly db: DataSource,
    private readonly secretKey: Buffer,
    /** Milliseconds between two relayed sends of one connection (DISPATCH_RATE_PER_CONNECTION). */
    private readonly spacingMs: number,
    private readonly report: (connectionId: string, events: Report[]) => void,
    private readonly logger: Logger,
  ) {}

  async enqueue(connectionId: string, message: OutboundMessage): Promise<{ providerMessageId: string }> {
    await this.db.query(`INSERT INTO baileys_outbox (message_id, connection_id, message) VALUES ($1, $2, $3) ON CONFLICT (message_id) DO NOTHING`, [
      message.messageId,
      connectionId,
      JSON.stringify(message),
    ]);
    return { providerMessageId: networkMessageId(this.secretKey, message.messageId) };
  }

  /** Writes what waits for the open sessions of this process; one drain at a time. */
  drain(sessions: Map<string, Session>): void {
    const open = [...sessions.values()].filter((s) => s.isOpen);
    if (this.draining || !open.length) return;
    this.draining = true;
    void this.drainOnce(new Map(open.map((s) => [s.connectionId, s])))
      .catch((err: unknown) => this.logger.error({ err }, "baileys relay failed"))
      .finally(() => (this.draining = false));
  }

  private async drainOnce(open: Map<string, Session>): Promise<void> {
    const waiting = await rows<{ message_id: string; connection_id: string; message: OutboundMessage; attempts: number; created_at: Date }>(
      this.db,
      `UPDATE baileys_outbox SET attempts = attempts + 1
        WHERE message_id IN (SELECT message_id FROM baileys_outbox WHERE connection_id = ANY($1::text[]) ORDER BY created_at LIMIT $2)
        RETURNING message_id, connection_id, message, attempts, created_at`,
      [[...open.keys()], RELAY_BATCH],
    );
    const byConnection = new Map<string, typeof waiting>();
    for (const w of waiting.sort((a, b) => new Date(a.created_at).getTime() - new Date(b.created_at).getTime())) byConnection.set(w.connection_id, [...(byConnection.get(w.connection_id) ?? []), w]);
    await Promise.all(
      [...byConnection].map(async ([connectionId, queue]) => {
        const session = open.get(connectionId)!;
        for (const item of queue) {
          try {
            await session.send(item.message);
          } catch (err) {
            const e = err instanceof EngineError ? err : new EngineError(String(err), false);
            if (!e.permanent && item.attempts < RELAY_ATTEMPTS) continue;
            this.report(connectionId, [
              { type: "message.status", message_id: item.message_id, status: "failed", error: { code: e.code, message: e.message.slice(0, 1000) }, timestamp: new Date().toISOString() },
            ]);
          }
          await this.db.query(`DELETE FROM baileys_outbox WHERE message_id = $1`, [item.message_id]);
          await new Promise((r) => setTimeout(r, this.spacingMs));
        }
      }),
    );
  }
}
