// The world outside the gateway, simulated: phones that scan pairing codes and log out, contacts
// and what they received, people who write in, and injected faults. The control API calls these.
import type { DataSource } from "typeorm";
import { rows } from "../../db/rows.js";
import { ApiError } from "../../http/errors.js";
import { sha256 } from "../../secrets.js";
import { SandboxDelivery } from "./entities.js";
import { newProviderMessageId, queueReports, type QueuedReport } from "./reports.js";
import type { ReactionEvent, EditedEvent, RevokedEvent, PollVoteEvent } from "../../../contract/index.js";
import type { ContactRevokeBody, EnterCodeBody, Faults, FaultsBody, InboundBody, NumberBody, PhoneSendBody, RestrictBody, ScanBody, TypingBody } from "./schemas.js";

/** What the network got from the gateway: a message, or an action on one (docs/conversations.md). */
export type Received =
  | {
      kind: "message";
      message_id: string;
      provider_message_id: string;
      from: string | null;
      to: unknown;
      body: string | null;
      media: unknown;
      location: unknown;
      /** A reply: our id of the message it quotes. */
      quoted_message_id: string | null;
      poll: unknown;
      delivered_at: string;
    }
  | { kind: "reaction" | "edit" | "revoke" | "read" | "presence"; message_id: string | null; from: string | null; to: string; delivered_at: string; [detail: string]: unknown };

/** A contact's action on a message, as its report says it (the message and its sender filled in). */
type ContactAction =
  | Pick<ReactionEvent, "type" | "emoji">
  | Pick<EditedEvent, "type" | "body">
  | Pick<RevokedEvent, "type">
  | Pick<PollVoteEvent, "type" | "options">;

export class SandboxNetwork {
  constructor(
    private readonly db: DataSource,
    /** Reports were queued: post them now rather than at the next poll. */
    private readonly reported: () => void,
  ) {}

  async faults(): Promise<Faults> {
    const [row] = (await this.db.query(`SELECT fail_next_sends, latency_ms, duplicate_callbacks FROM sandbox_faults`)) as Faults[];
    return row ?? { fail_next_sends: 0, latency_ms: 0, duplicate_callbacks: false };
  }

  /** Absent fields keep their value. */
  async setFaults(body: FaultsBody): Promise<Faults> {
    const [row] = await rows<Faults>(
      this.db,
      `UPDATE sandbox_faults SET fail_next_sends = COALESCE($1, fail_next_sends), latency_ms = COALESCE($2, latency_ms),
              duplicate_callbacks = COALESCE($3, duplicate_callbacks)
        RETURNING fail_next_sends, latency_ms, duplicate_callbacks`,
      [body.fail_next_sends ?? null, body.latency_ms ?? null, body.duplicate_callbacks ?? null],
    );
    return row!;
  }

  /** Consumes one injected send failure; false when another send took the last one. */
  async takeInjectedFailure(): Promise<boolean> {
    const taken = await rows(this.db, `UPDATE sandbox_faults SET fail_next_sends = fail_next_sends - 1 WHERE fail_next_sends > 0 RETURNING 1`);
    return taken.length > 0;
  }

  /** A phone scans a pairing payload: the session waiting for it links as that number. */
  async scan(body: ScanBody): Promise<{ phone: string }> {
    return this.link(sha256(body.payload), body.phone, "pairing payload: no session waits for it (already scanned, replaced by a newer one, or never issued)");
  }

  /**
   * The phone of `phone` types a pairing code: the session that showed it for that number links.
   * A code typed on another phone links nothing, as on the real network.
   */
  async enterCode(body: EnterCodeBody): Promise<{ phone: string }> {
    return this.link(pairingCodeDigest(body.code, body.phone), body.phone, "pairing code: no session waits for it from this phone (already used, replaced by a newer one, issued for another number, or never issued)");
  }

  private async link(digest: Buffer, phone: string, notFound: string): Promise<{ phone: string }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    await this.db.transaction(async (em) => {
      const linked = await rows<{ connection_id: string }>(
        em,
        `UPDATE sandbox_sessions SET state = 'linked', phone = $2, pairing_digest = NULL, updated_at = now()
          WHERE pairing_digest = $1 RETURNING connection_id`,
        [digest, phone],
      );
      if (!linked.length) throw ApiError.notFound(notFound);
      await queueReports(em, linked.map((s) => stateReport(s.connection_id, "connected", phone)), duplicate);
    });
    this.reported();
    return { phone };
  }

  async declareNumber(body: NumberBody): Promise<NumberBody> {
    await this.db.query(
      `INSERT INTO sandbox_contacts (phone, on_network, receipts, group_add) VALUES ($1, $2, $3, $4)
       ON CONFLICT (phone) DO UPDATE SET on_network = EXCLUDED.on_network, receipts = EXCLUDED.receipts, group_add = EXCLUDED.group_add, updated_at = now()`,
      [body.phone, body.on_network, body.receipts, body.group_add],
    );
    return { phone: body.phone, on_network: body.on_network, receipts: body.receipts, group_add: body.group_add };
  }

  /**
   * A message arrives for the number `to`. Several devices may be linked to one number (as on
   * real networks): each linked session reports it.
   */
  async inbound(body: InboundBody): Promise<{ provider_message_id: string; sessions: number }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    const providerMessageId = newProviderMessageId();
    const sessions = await this.db.transaction(async (em) => {
      const linked: { connection_id: string }[] = await em.query(`SELECT connection_id FROM sandbox_sessions WHERE phone = $1 AND state = 'linked'`, [
        body.to,
      ]);
      if (!linked.length) throw ApiError.notFound(`linked session for ${body.to}`);
      const timestamp = new Date().toISOString();
      const reports: QueuedReport[] = linked.map((s) => ({
        connectionId: s.connection_id,
        report: {
          type: "message.inbound",
          provider_message_id: providerMessageId,
          from: body.from,
          ...(body.from_lid !== undefined && { from_lid: body.from_lid }),
          to: body.to,
          ...(body.group !== undefined && { group: body.group }),
          ...(body.body !== undefined && { body: body.body }),
          ...(body.media !== undefined && { media: body.media }),
          ...(body.location !== undefined && { location: body.location }),
          timestamp,
        },
      }));
      await queueReports(em, reports, duplicate);
      return linked.length;
    });
    this.reported();
    return { provider_message_id: providerMessageId, sessions };
  }

  /**
   * The person holding the phone `from` writes a message on the phone itself: every session linked
   * to it reports it, as a real engine reports what the phone sent.
   */
  async phoneSend(body: PhoneSendBody): Promise<{ provider_message_id: string; sessions: number }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    const providerMessageId = newProviderMessageId();
    const sessions = await this.db.transaction(async (em) => {
      const linked = await rows<{ connection_id: string }>(em, `SELECT connection_id FROM sandbox_sessions WHERE phone = $1 AND state = 'linked'`, [body.from]);
      if (!linked.length) throw ApiError.notFound(`linked session for ${body.from}`);
      const { from: _from, ...content } = body;
      const timestamp = new Date().toISOString();
      await queueReports(
        em,
        linked.map((s) => ({ connectionId: s.connection_id, report: { type: "message.outbound_from_phone" as const, provider_message_id: providerMessageId, ...content, timestamp } })),
        duplicate,
      );
      return linked.length;
    });
    this.reported();
    return { provider_message_id: providerMessageId, sessions };
  }

  /**
   * The contact `from` acts on a message of a chat with the linked number `to` (reacts, edits,
   * revokes, votes): every session linked to `to` that has the message reports it. The message is
   * named by our id (the network knows it by its own: the gateway's record maps one to the other).
   */
  async act(body: ContactRevokeBody, action: ContactAction): Promise<{ sessions: number }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    const sessions = await this.db.transaction(async (em) => {
      const targets = await rows<{ connection_id: string; provider_message_id: string; poll: { options: string[]; selectable: number } | null }>(
        em,
        `SELECT s.connection_id, m.provider_message_id, m.poll
           FROM sandbox_sessions s JOIN messages m ON m.connection_id = s.connection_id
          WHERE s.phone = $1 AND s.state = 'linked' AND m.id = $2 AND m.provider_message_id IS NOT NULL`,
        [body.to, body.message_id],
      );
      if (!targets.length) throw ApiError.notFound(`message ${body.message_id} with a network id on a session linked as ${body.to}`);
      if (action.type === "message.poll_vote") {
        const poll = targets[0]!.poll;
        if (!poll) throw ApiError.notFound(`poll ${body.message_id}`);
        const unknown = action.options.filter((o) => !poll.options.includes(o));
        if (unknown.length) throw ApiError.validation([{ path: "body.options", message: `not options of the poll: ${unknown.join(", ")}` }]);
        if (action.options.length > poll.selectable) throw ApiError.validation([{ path: "body.options", message: `at most ${poll.selectable} may be chosen` }]);
      }
      const timestamp = new Date().toISOString();
      await queueReports(
        em,
        targets.map((t) => ({ connectionId: t.connection_id, report: { ...action, provider_message_id: t.provider_message_id, from: body.from, timestamp } })),
        duplicate,
      );
      return targets.length;
    });
    this.reported();
    return { sessions };
  }

  /** The contact `from` types, records or pauses in a chat with `to` (or in `group`): every linked session reports it. */
  async typing(body: TypingBody): Promise<{ sessions: number }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    const sessions = await this.db.transaction(async (em) => {
      const linked = await rows<{ connection_id: string }>(em, `SELECT connection_id FROM sandbox_sessions WHERE phone = $1 AND state = 'linked'`, [body.to]);
      if (!linked.length) throw ApiError.notFound(`linked session for ${body.to}`);
      const timestamp = new Date().toISOString();
      const report = { type: "chat.presence" as const, from: body.from, state: body.state, ...(body.group !== undefined && { group: body.group }), timestamp };
      await queueReports(em, linked.map((s) => ({ connectionId: s.connection_id, report })), duplicate);
      return linked.length;
    });
    this.reported();
    return { sessions };
  }

  /** The network restricts the account of `phone`, or lifts the restriction: every session linked to it reports it. */
  async restrict(body: RestrictBody): Promise<{ sessions: number }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    const sessions = await this.db.transaction(async (em) => {
      const linked = await rows<{ connection_id: string }>(em, `SELECT connection_id FROM sandbox_sessions WHERE phone = $1 AND state = 'linked'`, [body.phone]);
      if (!linked.length) throw ApiError.notFound(`linked session for ${body.phone}`);
      const report = { type: "connection.restriction" as const, active: body.active, until: body.active && body.until ? new Date(body.until).toISOString() : null };
      await queueReports(em, linked.map((s) => ({ connectionId: s.connection_id, report })), duplicate);
      return linked.length;
    });
    this.reported();
    return { sessions };
  }

  /** The phone logs out its linked devices: every session linked to it reports `disconnected`. */
  async logout(phone: string): Promise<{ sessions: number }> {
    const duplicate = (await this.faults()).duplicate_callbacks;
    const sessions = await this.db.transaction(async (em) => {
      const unlinked = await rows<{ connection_id: string }>(
        em,
        `UPDATE sandbox_sessions SET state = 'unlinked', updated_at = now() WHERE phone = $1 AND state = 'linked' RETURNING connection_id`,
        [phone],
      );
      if (!unlinked.length) throw ApiError.notFound(`linked session for ${phone}`);
      await queueReports(em, unlinked.map((s) => stateReport(s.connection_id, "disconnected")), duplicate);
      return unlinked.length;
    });
    this.reported();
    return { sessions };
  }

  /** What the network got for `to` (a phone or a group id) from the gateway, oldest first: messages and actions. */
  async received(to: string): Promise<Received[]> {
    const delivered = await this.db
      .getRepository(SandboxDelivery)
      .createQueryBuilder("d")
      .where("d.toAddress = :to AND d.outcome = 'delivered'", { to })
      .orderBy("d.id", "ASC")
      .getMany();
    const messages: Received[] = delivered.map((d) => ({
      kind: "message",
      message_id: d.messageId,
      provider_message_id: d.providerMessageId,
      from: d.fromPhone,
      to: d.recipient,
      body: d.body,
      media: d.media,
      location: d.location,
      quoted_message_id: d.quotedMessageId,
      poll: d.poll,
      delivered_at: d.createdAt.toISOString(),
    }));
    const actions = await rows<{ kind: "reaction" | "edit" | "revoke" | "read" | "presence"; message_id: string | null; from: string | null; detail: Record<string, unknown>; created_at: Date }>(
      this.db,
      `SELECT a.kind, a.message_id, s.phone AS from, a.detail, a.created_at
         FROM sandbox_actions a LEFT JOIN sandbox_sessions s ON s.connection_id = a.connection_id
        WHERE a.to_address = $1 ORDER BY a.id`,
      [to],
    );
    const acted: Received[] = actions.map((a) => ({
      kind: a.kind,
      message_id: a.message_id,
      from: a.from,
      to,
      ...a.detail,
      delivered_at: new Date(a.created_at).toISOString(),
    }));
    // Both lists are in order already (messages in the order the network took them, which their
    // times need not follow: concurrent hand-offs take their time at their transaction's start);
    // merged so that each keeps its own order, an action before the first message later than it.
    const merged: Received[] = [];
    let next = 0;
    for (const message of messages) {
      while (next < acted.length && Date.parse(acted[next]!.delivered_at) < Date.parse(message.delivered_at)) merged.push(acted[next++]!);
      merged.push(message);
    }
    return [...merged, ...acted.slice(next)];
  }

}

/** What a session stores of a pairing code: bound to the number that must type it; the dash and case do not count. */
export function pairingCodeDigest(code: string, phone: string): Buffer {
  return sha256(`pairing-code:${phone}:${code.replace(/-/g, "").toUpperCase()}`);
}

function stateReport(connectionId: string, state: "connected" | "disconnected", phone?: string): QueuedReport {
  return { connectionId, report: { type: "connection.state", state, ...(phone !== undefined && { phone }) } };
}
