// What the engine remembers besides auth state: the messages it wrote (so that it can answer the
// library's `getMessage` when a recipient's device asks for a retry), and which LID is which
// phone number (the network addresses people by LID; we report contacts by number where known).
import { BufferJSON, type proto } from "@whiskeysockets/baileys";
import type { DataSource } from "typeorm";
import { rows } from "../../db/rows.js";
import { decrypt, encrypt } from "../../secrets.js";

/** Stored messages older than this are not kept: retry requests come within minutes. */
export const MESSAGE_STORE_DAYS = 14;

export class SessionStore {
  constructor(
    private readonly db: DataSource,
    private readonly secretKey: Buffer,
  ) {}

  /** Before the socket write: our id under its network id, so receipts find their message. */
  async intend(connectionId: string, networkId: string, messageId: string): Promise<void> {
    await this.db.query(
      `INSERT INTO baileys_messages (connection_id, network_id, message_id) VALUES ($1, $2, $3) ON CONFLICT (connection_id, network_id) DO NOTHING`,
      [connectionId, networkId, messageId],
    );
  }

  /** After the socket write: the message itself, for the library's retry requests. */
  async saveMessage(connectionId: string, networkId: string, message: proto.IMessage): Promise<void> {
    await this.db.query(
      `INSERT INTO baileys_messages (connection_id, network_id, message_sealed) VALUES ($1, $2, $3)
       ON CONFLICT (connection_id, network_id) DO UPDATE SET message_sealed = EXCLUDED.message_sealed`,
      [connectionId, networkId, encrypt(this.secretKey, JSON.stringify(message, BufferJSON.replacer))],
    );
  }

  async getMessage(connectionId: string, networkId: string): Promise<proto.IMessage | undefined> {
    const [row] = await rows<{ message_sealed: string | null }>(
      this.db,
      `SELECT message_sealed FROM baileys_messages WHERE connection_id = $1 AND network_id = $2`,
      [connectionId, networkId],
    );
    return row?.message_sealed ? (JSON.parse(decrypt(this.secretKey, row.message_sealed), BufferJSON.reviver) as proto.IMessage) : undefined;
  }

  /** True when the message was written to the socket and recorded (a repeated hand-off). */
  async recorded(connectionId: string, networkId: string): Promise<boolean> {
    const found = await rows(this.db, `SELECT 1 FROM baileys_messages WHERE connection_id = $1 AND network_id = $2 AND message_sealed IS NOT NULL`, [
      connectionId,
      networkId,
    ]);
    return found.length > 0;
  }

  /** True when the gateway sent (or began to send) this network message: its echo is not news. */
  async known(connectionId: string, networkId: string): Promise<boolean> {
    const found = await rows(this.db, `SELECT 1 FROM baileys_messages WHERE connection_id = $1 AND network_id = $2`, [connectionId, networkId]);
    return found.length > 0;
  }

  /** Our message ids by network id, for the ones the gateway sent. */
  async ourIds(connectionId: string, networkIds: string[]): Promise<Map<string, string>> {
    const found = await rows<{ network_id: string; message_id: string }>(
      this.db,
      `SELECT network_id, message_id FROM baileys_messages WHERE connection_id = $1 AND network_id = ANY($2::text[]) AND message_id IS NOT NULL`,
      [connectionId, networkIds],
    );
    return new Map(found.map((r) => [r.network_id, r.message_id]));
  }

  async pruneMessages(): Promise<void> {
    await this.db.query(`DELETE FROM baileys_messages WHERE created_at < now() - make_interval(days => $1)`, [MESSAGE_STORE_DAYS]);
  }

  /** Records LID ↔ phone pairs (bare user parts, e.g. "12345@lid" → "+15550001111"). */
  async mapLids(connectionId: string, pairs: { lid: string; phone: string }[]): Promise<void> {
    const unique = [...new Map(pairs.map((p) => [p.lid, p])).values()];
    if (!unique.length) return;
    await this.db.query(
      `INSERT INTO baileys_lid_map (connection_id, lid, phone) SELECT $1, l, p FROM unnest($2::text[], $3::text[]) AS x(l, p)
       ON CONFLICT (connection_id, lid) DO UPDATE SET phone = EXCLUDED.phone, updated_at = now()
         WHERE baileys_lid_map.phone IS DISTINCT FROM EXCLUDED.phone`,
      [connectionId, unique.map((p) => p.lid), unique.map((p) => p.phone)],
    );
  }

  async phoneOfLid(connectionId: string, lid: string): Promise<string | undefined> {
    const [row] = await rows<{ phone: string }>(this.db, `SELECT phone FROM baileys_lid_map WHERE connection_id = $1 AND lid = $2`, [connectionId, lid]);
    return row?.phone;
  }
}
