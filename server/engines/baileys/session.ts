// One connection's session on this process: its socket, from open to close, and what the socket
// reports translated into our provider events. The engine (engine.ts) decides which sessions this
// process runs (it holds their leases); a session reconnects by itself with exponential backoff
// and jitter after any close but a logout, and gives up pairing after a bounded number of QRs.
import { groupReport } from "../../groups/view.js";
import { groupMetadataCache } from "./groups.js";
import { DisconnectReason, type BaileysEventMap, type GroupMetadata, type WAMessage } from "@whiskeysockets/baileys";
import type { Media, ProviderEvent } from "../../../contract/index.js";
import type { Logger } from "../../logger.js";
import { encrypt } from "../../secrets.js";
import type { UrlCheckOptions } from "../../webhooks/address-policy.js";
import { EngineError, type NumberCheck, type OutboundMessage } from "../engine.js";
import { loadAuthState, wipeSession, type StoredAuth } from "./auth-state.js";
import type { Leases } from "./lease.js";
import { fetchMedia } from "./media.js";
import type { EngineSocket, SocketFactory } from "./socket.js";
import type { SessionStore } from "./store.js";
import { isGroupJid, lidOfJid, lidPairs, messageContent, messageTime, networkMessageId, outboundContent, phoneJid, phoneOfJid, recipientJid, statusOfCode } from "./translate.js";
import type { DataSource } from "typeorm";

/** Unscanned QR codes shown before the socket closes and the connection is pairable again. */
export const MAX_QR_ROTATIONS = 5;
/** Reconnect delays: 1 s doubling up to 60 s, each multiplied by a jitter in [0.5, 1.5). */
export const RECONNECT_BASE_MS = 1_000;
export const RECONNECT_MAX_MS = 60_000;
/** A number check waits this long for the network, then answers `checked: false`. */
export const CHECK_TIMEOUT_MS = 5_000;
/** Messages written on the phone before the session opened, minus this, are history, not news. */
const HISTORY_SLACK_MS = 60_000;

export type Report = ProviderEvent extends infer E ? (E extends unknown ? Omit<E, "event_id"> & { event_id?: string } : never) : never;

export interface SessionHost {
  db: DataSource;
  secretKey: Buffer;
  logger: Logger;
  store: SessionStore;
  leases: Leases;
  factory: SocketFactory;
  mediaPolicy: UrlCheckOptions;
  /** Applies reports through the provider callback code, in order, retrying on failure. */
  report(connectionId: string, events: Report[]): void;
  /** The session ended for good here (logout, pairing given up): drop it and its lease. */
  forget(session: Session): void;
  count(metric: "reconnect" | "send" | "receipt", label?: string): void;
}

export function reconnectDelay(attempt: number, random = Math.random): number {
  return Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** attempt) * (0.5 + random());
}

export class Session {
  private socket: EngineSocket | null = null;
  private auth: StoredAuth | null = null;
  private open = false;
  private openedAt = 0;
  private qrs = 0;
  private attempt = 0;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;
  private qrWaiters: ((qr: string | null) => void)[] = [];
  private latestQr: string | null = null;

  /** The send path's group metadata: our cache, one network query on a miss (groups.ts). */
  private readonly groupMetadata: (jid: string) => Promise<GroupMetadata | undefined>;

  constructor(
    private readonly host: SessionHost,
    readonly connectionId: string,
  ) {
    this.groupMetadata = groupMetadataCache(
      host.db,
      connectionId,
      async (jid) => {
        if (!this.socket) throw new Error("no socket");
        return this.socket.groupMetadata(jid);
      },
      (group) => this.report([{ type: "group.metadata", group: groupReport(group) }]),
    );
  }

  get isOpen(): boolean {
    return this.open;
  }

  /** Opens the socket (again). */
  async connect(): Promise<void> {
    if (this.ended) return;
    // Loaded once: a reconnect goes on with the credentials in memory (a write may be in flight).
    this.auth ??= await loadAuthState(this.host.db, this.host.secretKey, this.connectionId);
    const socket = await this.host.factory({
      connectionId: this.connectionId,
      auth: this.auth.state,
      getMessage: async (key) => (key.id ? this.host.store.getMessage(this.connectionId, key.id) : undefined),
      cachedGroupMetadata: this.groupMetadata,
      logger: this.host.logger,
    });
    if (this.ended) {
      // Ended while the socket was being made (suspended, lease lost): it must not stay open.
      await Promise.resolve(socket.end(undefined)).catch(() => undefined);
      return;
    }
    this.socket = socket;
    const on = <E extends keyof BaileysEventMap>(event: E, handle: (arg: BaileysEventMap[E]) => Promise<void>) =>
      socket.ev.on(event, (arg) => {
        // Events of a socket we replaced or closed are not ours to act on.
        if (this.socket !== socket) return;
        handle(arg).catch((err: unknown) => this.host.logger.error({ err, connection_id: this.connectionId, event }, "baileys event handling failed"));
      });
    on("connection.update", (u) => this.onConnectionUpdate(socket, u));
    on("creds.update", async (update) => {
      Object.assign(this.auth!.state.creds, update);
      await this.auth!.saveCreds();
    });
    on("messages.upsert", (u) => this.onUpsert(u.messages));
    on("messages.update", (updates) => this.onStatus(updates.map((u) => ({ key: u.key, status: statusOfCode(u.update.status) }))));
    on("message-receipt.update", (updates) =>
      this.onStatus(updates.map((u) => ({ key: u.key, status: u.receipt.readTimestamp ? ("read" as const) : u.receipt.receiptTimestamp ? ("delivered" as const) : null }))),
    );
    on("lid-mapping.update", async (m) => {
      const lid = lidOfJid(m.lid);
      const phone = phoneOfJid(m.pn);
      if (lid && phone) await this.host.store.mapLids(this.connectionId, [{ lid, phone }]);
    });
  }

  /** The first QR of a pairing socket (or the latest one); null when the socket closed first. */
  nextQr(timeoutMs: number): Promise<string | null> {
    if (this.latestQr) return Promise.resolve(this.latestQr);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), timeoutMs);
      this.qrWaiters.push((qr) => {
        clearTimeout(timer);
        resolve(qr);
      });
    });
  }

  private async onConnectionUpdate(socket: EngineSocket, u: Partial<BaileysEventMap["connection.update"]>): Promise<void> {
    if (u.qr) {
      this.qrs += 1;
      if (this.qrs > MAX_QR_ROTATIONS) {
        // Nobody scanned: close, and let the connection be paired again.
        this.host.logger.info({ connection_id: this.connectionId }, "pairing QR not scanned; closing the socket");
        this.report([{ type: "connection.state", state: "disconnected" }]);
        await this.end();
        this.host.forget(this);
        return;
      }
      this.latestQr = u.qr;
      await this.host.leases.setQr(this.connectionId, encrypt(this.host.secretKey, u.qr));
      for (const w of this.qrWaiters.splice(0)) w(u.qr);
    }
    if (u.connection === "open") {
      this.open = true;
      this.openedAt = Date.now();
      this.attempt = 0;
      this.qrs = 0;
      this.latestQr = null;
      await this.host.leases.setQr(this.connectionId, null);
      const phone = phoneOfJid(socket.user?.id);
      const lid = lidOfJid(socket.user?.lid);
      if (phone && lid) await this.host.store.mapLids(this.connectionId, [{ lid, phone }]);
      this.report([{ type: "connection.state", state: "connected", ...(phone && { phone }) }]);
    }
    if (u.connection === "close") {
      this.open = false;
      this.socket = null;
      this.latestQr = null;
      for (const w of this.qrWaiters.splice(0)) w(null);
      if (this.ended) return;
      const code = (u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode;
      if (code === DisconnectReason.loggedOut || code === DisconnectReason.forbidden) {
        // Unlinked on the phone (or banned): the auth state is worthless now, and pairing starts over.
        this.ended = true;
        await wipeSession(this.host.db, this.connectionId);
        this.report([{ type: "connection.state", state: "disconnected" }]);
        this.host.forget(this);
        return;
      }
      if (code === DisconnectReason.connectionReplaced) {
        // Another socket took the number: never fight it (two sockets get the device logged out).
        this.host.logger.warn({ connection_id: this.connectionId }, "baileys socket replaced by another; giving the session up here");
        this.ended = true;
        this.host.forget(this);
        return;
      }
      // After a scan the library asks for a restart; anything else is retried with backoff.
      const delay = code === DisconnectReason.restartRequired ? 0 : reconnectDelay(this.attempt++);
      this.host.count("reconnect");
      this.timer = setTimeout(() => void this.connect().catch((err: unknown) => this.retryLater(err)), delay);
    }
  }

  private retryLater(err: unknown): void {
    this.host.logger.warn({ err, connection_id: this.connectionId }, "baileys reconnect failed");
    if (this.ended) return;
    this.timer = setTimeout(() => void this.connect().catch((e: unknown) => this.retryLater(e)), reconnectDelay(this.attempt++));
  }

  private report(events: Report[]): void {
    this.host.report(this.connectionId, events);
  }

  /** What the socket received or the phone wrote. */
  private async onUpsert(messages: WAMessage[]): Promise<void> {
    await this.host.store.mapLids(this.connectionId, messages.flatMap((m) => lidPairs(m.key)));
    const events: Report[] = [];
    for (const msg of messages) {
      const { key } = msg;
      if (!key.id || !key.remoteJid || key.remoteJid === "status@broadcast") continue;
      const content = messageContent(msg.message);
      if (!content) continue;
      const at = messageTime(msg);
      const group = isGroupJid(key.remoteJid) ? key.remoteJid : undefined;
      if (key.fromMe) {
        // Our own sends come back as upserts too; only what the phone wrote is news.
        if (await this.host.store.known(this.connectionId, key.id)) continue;
        if (at.getTime() < this.openedAt - HISTORY_SLACK_MS) continue;
        const to = group ? undefined : await this.phoneOf(key.remoteJid, key.remoteJidAlt);
        events.push({ type: "message.outbound_from_phone", event_id: `bly_out_${key.id}`, provider_message_id: key.id, ...(group ? { group } : { to }), ...content, timestamp: at.toISOString() });
        continue;
      }
      const from = group ? await this.phoneOf(key.participant, key.participantAlt) : await this.phoneOf(key.remoteJid, key.remoteJidAlt);
      const me = phoneOfJid(this.socket?.user?.id);
      events.push({
        type: "message.inbound",
        event_id: `bly_in_${key.id}`,
        provider_message_id: key.id,
        from,
        ...(me && { to: me }),
        ...(group && { group }),
        ...content,
        timestamp: at.toISOString(),
      });
    }
    if (events.length) this.report(events);
  }

  /** The phone number of a JID, through its alternate form or the LID map; else the JID itself. */
  private async phoneOf(jid: string | null | undefined, alt: string | null | undefined): Promise<string> {
    const phone = phoneOfJid(jid) ?? phoneOfJid(alt);
    if (phone) return phone;
    const lid = lidOfJid(jid) ?? lidOfJid(alt);
    const mapped = lid ? await this.host.store.phoneOfLid(this.connectionId, lid) : undefined;
    return (mapped ?? lid ?? jid ?? "unknown").slice(0, 40);
  }

  /** Acknowledgements and receipts of our messages. */
  private async onStatus(updates: { key: { id?: string | null; fromMe?: boolean | null }; status: "sent" | "delivered" | "read" | "failed" | null }[]): Promise<void> {
    const relevant = updates.filter((u) => u.key.fromMe && u.key.id && u.status);
    if (!relevant.length) return;
    const ours = await this.host.store.ourIds(this.connectionId, relevant.map((u) => u.key.id!));
    const timestamp = new Date().toISOString();
    const events: Report[] = [];
    for (const u of relevant) {
      const messageId = ours.get(u.key.id!);
      if (!messageId) continue;
      this.host.count("receipt", u.status!);
      events.push({
        type: "message.status",
        event_id: `bly_st_${u.key.id}_${u.status}`,
        message_id: messageId,
        provider_message_id: u.key.id!,
        status: u.status!,
        ...(u.status === "failed" && { error: { code: "network_error", message: "The network reported an error for this message." } }),
        timestamp,
      });
    }
    if (events.length) this.report(events);
  }

  /** Writes our message to the socket under the network id derived from ours. */
  async send(message: OutboundMessage): Promise<{ providerMessageId: string }> {
    const networkId = networkMessageId(this.host.secretKey, message.messageId);
    // Written and recorded before (a hand-off retried after the answer was lost): nothing to do.
    if (await this.host.store.recorded(this.connectionId, networkId)) return { providerMessageId: networkId };
    const socket = this.socket;
    if (!socket || !this.open) throw new EngineError("the session is not open (connecting or reconnecting)", false, "session_not_open");
    const media = message.media ? await this.fetch(message.media) : null;
    await this.host.store.intend(this.connectionId, networkId, message.messageId);
    const sent = await socket
      .sendMessage(recipientJid(message.to), outboundContent(message.body, media, message.location), { messageId: networkId })
      .catch((err: unknown) => {
        this.host.count("send", "failed");
        throw new EngineError(`the network did not take the message: ${err instanceof Error ? err.message : String(err)}`, false, "network_send_failed");
      });
    this.host.count("send", "written");
    if (sent?.message) await this.host.store.saveMessage(this.connectionId, networkId, sent.message);
    return { providerMessageId: networkId };
  }

  private async fetch(media: Media): Promise<{ spec: Media; data: Buffer; mimetype: string }> {
    const fetched = await fetchMedia(media, this.host.mediaPolicy);
    return { spec: media, ...fetched };
  }

  async checkNumber(phone: string): Promise<NumberCheck> {
    const socket = this.socket;
    if (!socket || !this.open) return { checked: false, onNetwork: null };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), CHECK_TIMEOUT_MS)));
    try {
      const found = await Promise.race([socket.onWhatsApp(phoneJid(phone)).catch(() => null), timeout]);
      if (!found) return { checked: false, onNetwork: null };
      return { checked: true, onNetwork: found.some((r) => r.exists) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the socket for good on this process (suspend, lease lost, shutdown); the link survives. */
  async end(): Promise<void> {
    this.ended = true;
    this.open = false;
    clearTimeout(this.timer);
    const socket = this.socket;
    this.socket = null;
    for (const w of this.qrWaiters.splice(0)) w(null);
    if (socket) await Promise.resolve(socket.end(undefined)).catch(() => undefined);
  }

  /** Unlinks the device (the connection was deleted or logged out by us) and forgets the session. */
  async logout(): Promise<void> {
    const socket = this.socket;
    this.ended = true;
    if (socket) await socket.logout().catch((err: unknown) => this.host.logger.warn({ err, connection_id: this.connectionId }, "baileys logout failed"));
    await this.end();
    await wipeSession(this.host.db, this.connectionId);
  }
}
