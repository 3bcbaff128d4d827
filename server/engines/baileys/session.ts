// One connection's session on this process: its socket, from open to close, and what the socket
// reports translated into our provider events. The engine (engine.ts) decides which sessions this
// process runs (it holds their leases); a session reconnects by itself with exponential backoff
// and jitter after any close but a logout, a replacement elsewhere (440) or a step the library
// cannot do (passkey), and gives up pairing after a bounded number of QRs.
import { cachedGroup } from "../../groups/cache.js";
import { groupReport } from "../../groups/view.js";
import { groupOf, libraryMetadata, participantOf } from "./groups.js";
import type { Readable } from "node:stream";
import { DisconnectReason, jidNormalizedUser, type AnyMessageContent, type BaileysEventMap, type GroupMetadata, type ReachoutTimelockState, type WAMessage, type WAVersion } from "@whiskeysockets/baileys";
import type { Media, PresenceState, ProviderEvent, Recipient } from "../../../contract/index.js";
import { backoffMs } from "../../backoff.js";
import type { Logger } from "../../logger.js";
import { encrypt } from "../../secrets.js";
import type { UrlCheckOptions } from "../../outbound/address-policy.js";
import { EngineError, type MessageRef, type NumberCheck, type OutboundMessage } from "../engine.js";
import { capStream } from "../media-fetch.js";
import { loadAuthState, wipeSession, type StoredAuth } from "./auth-state.js";
import type { Leases } from "./lease.js";
import { chatAction, chatJid, libraryPresence, messageKey, pollContent, presenceState, quotedMessage, votedOptions, type ChatAction } from "./conversations.js";
import { fetchMedia } from "./media.js";
import { RetryCounters } from "./retry-counters.js";
import { CheckThrottle, type NumberCheckCache } from "./number-checks.js";
import type { EngineSocket, SocketFactory } from "./socket.js";
import type { SessionStore } from "./store.js";
import { isGroupJid, isIgnoredJid, lidAddress, lidOfJid, lidPairs, messageContent, messageTime, networkMessageId, outboundContent, phoneJid, phoneOfJid, recipientJid, statusOfCode } from "./translate.js";
import type { DataSource } from "typeorm";

/** Unscanned QR codes shown before the socket closes and the connection is pairable again. */
export const MAX_QR_ROTATIONS = 5;
/** Reconnect delays: 1 s doubling up to 60 s, each multiplied by a jitter in [0.5, 1.5). */
export const RECONNECT_BASE_MS = 1_000;
export const RECONNECT_MAX_MS = 60_000;
/** A number check waits this long for the network, then answers `checked: false`. */
export const CHECK_TIMEOUT_MS = 5_000;
/** Group metadata kept per session: at most this many groups, each refreshed after this long without a group event. */
export const GROUP_CACHE_SIZE = 500;
export const GROUP_CACHE_MS = 60 * 60_000;
/** A connection open this long is steady: restart requests count from zero again. */
const STEADY_MS = RECONNECT_MAX_MS;
/** The network refuses the client version the socket presented (a `<failure reason="405">`). */
export const CLIENT_VERSION_REFUSED = 405;
/** Credentials saves: attempts and the pause between them (the library's own key-write retries: 10 × 3 s). */
export const CREDS_SAVE_ATTEMPTS = 10;
export const CREDS_SAVE_PAUSE_MS = 3_000;
/** The stanza the network sends after a scan when the account must confirm with a passkey. */
export const PASSKEY_NOTIFICATION = "CB:notification,type:passkey_prologue_request";

/** Why a connection is not connected, as its `detail` says. */
export type Problem = "replaced_elsewhere" | "client_version_refused" | "passkey_required" | "creds_save_failed";

export type Report = ProviderEvent extends infer E ? (E extends unknown ? Omit<E, "event_id"> & { event_id?: string } : never) : never;

export interface SessionHost {
  db: DataSource;
  secretKey: Buffer;
  logger: Logger;
  store: SessionStore;
  leases: Leases;
  /** Number checks remembered a day per connection (number-checks.ts). */
  numberChecks: NumberCheckCache;
  factory: SocketFactory;
  mediaPolicy: UrlCheckOptions;
  /** The proxy a connection's socket goes through now (its own, else the default); undefined for none. */
  proxyUrlOf(connectionId: string): Promise<string | undefined>;
  /** Records reports durably, then applies them in order; resolves once applied. */
  report(connectionId: string, events: Report[]): Promise<void>;
  /** The session ended for good here (logout, pairing given up): drop it and its lease. */
  forget(session: Session): void;
  count(metric: "reconnect" | "send" | "receipt" | "problem", label?: string): void;
  /** The client version to present now. */
  version(): WAVersion | undefined;
  /** The network refused `version`: fetch the current one again (unless pinned). */
  versionRefused(version: WAVersion | undefined): void;
  /** Pause between two credentials save attempts (tests shorten it). */
  credsSavePauseMs(): number;
}

/** The error ack of a message the network would not let the account send: possibly a restriction. */
const RESTRICTION_ACK = "463";

/** The library's restriction state ("reachout timelock") as our report. */
export function restrictionReport(lock: ReachoutTimelockState): Report {
  const until = lock.isActive && lock.timeEnforcementEnds instanceof Date && !Number.isNaN(lock.timeEnforcementEnds.getTime()) ? lock.timeEnforcementEnds.toISOString() : null;
  return { type: "connection.restriction", active: Boolean(lock.isActive), until };
}

/** What the network's error acks mean, by the code the library passes on (its source names them). */
const NETWORK_ERRORS: Record<string, string> = {
  "463": "the network refused to start this chat: the account is restricted, or it holds no privacy token for this contact; retrying counts as another attempt and deepens a restriction",
  "479": "the network rejected the message as invalid (a stale device session or a wrong address)",
};

/** A failed message's error, keeping the network's own code (`network_463`) where the ack carried one. */
export function networkError(code: string | undefined): { code: string; message: string } {
  if (!code || !/^\d{1,6}$/.test(code)) return { code: "network_error", message: "The network reported an error for this message." };
  return { code: `network_${code}`, message: `The network answered error ${code}${NETWORK_ERRORS[code] ? `: ${NETWORK_ERRORS[code]}` : ""}.` };
}

/** The library's 8-character code as the phone shows its boxes: ABCD-EFGH. */
export function formatPairingCode(code: string): string {
  const plain = code.replace(/-/g, "").toUpperCase();
  return plain.length === 8 ? `${plain.slice(0, 4)}-${plain.slice(4)}` : plain;
}

export function reconnectDelay(attempt: number, random = Math.random): number {
  return backoffMs(attempt + 1, RECONNECT_BASE_MS, RECONNECT_MAX_MS, { jitter: 0.5, random });
}

export class Session {
  private socket: EngineSocket | null = null;
  private auth: StoredAuth | null = null;
  private open = false;
  private qrs = 0;
  private attempt = 0;
  /**
   * Restart-required closes without a steady connection between them: the first (after a scan)
   * reconnects at once, later ones back off (a network asking again and again is not obeyed at once).
   */
  private restarts = 0;
  private openedAt = 0;
  /** Credentials changed in memory but not yet saved: saved before any new socket opens. */
  private credsUnsaved = false;
  /** Why the socket is not connected, when the network said (shown as the connection's detail). */
  problem: Problem | null = null;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;
  private qrWaiters: ((qr: string | null) => void)[] = [];
  private openWaiters: ((open: boolean) => void)[] = [];
  /**
   * Group metadata the library asks for before every group send: fetched once, refreshed on the
   * group events, kept across socket restarts (the session outlives its sockets).
   */
  private readonly groups = new Map<string, { metadata: GroupMetadata; at: number }>();
  /** Network queries of group metadata under way, shared by the sends waiting on them. */
  private readonly groupQueries = new Map<string, Promise<GroupMetadata | undefined>>();
  /** Group listings the group routes asked for, under way: their `groups.update` echo is not reported. */
  private listing = 0;
  /** Retry requests per message, counted across socket restarts (retry-counters.ts). */
  private readonly retryCounters = new RetryCounters();
  private latestQr: string | null = null;
  private askingRestriction = false;
  private ordered: Promise<void> = Promise.resolve();
  private readonly checks = new CheckThrottle();

  constructor(
    private readonly host: SessionHost,
    readonly connectionId: string,
    /**
     * A pairing session (the only kind that may open a socket without a linked device), and for
     * pairing by code the number (E.164) that types it: each QR the socket rotates to brings a
     * fresh code instead.
     */
    readonly pairing: { phone: string | null } | null = null,
    /** The auth state when already read (an unlink's, read before the delete's purge wipes it). */
    auth: StoredAuth | null = null,
  ) {
    this.auth = auth;
  }

  get pairingPhone(): string | null {
    return this.pairing?.phone ?? null;
  }

  get isOpen(): boolean {
    return this.open;
  }

  /** Opens the socket (again). */
  async connect(): Promise<void> {
    if (this.ended) return;
    // Loaded once: a reconnect goes on with the credentials in memory (a write may be in flight).
    this.auth ??= await loadAuthState(this.host.db, this.host.secretKey, this.connectionId);
    // No device is linked (unlinked while the connection still read `connected`, its report not
    // applied yet): a socket now would only show QR codes nobody asked for. It reads disconnected.
    if (!this.pairing && !this.auth.state.creds.me) {
      this.host.logger.warn({ connection_id: this.connectionId }, "baileys session has no linked device; not opening a pairing socket for it");
      await this.unlinked();
      return;
    }
    // Never a new socket on credentials the database does not have: a failed save is made good first.
    if (this.credsUnsaved) await this.saveCreds();
    const version = this.host.version();
    const proxyUrl = await this.host.proxyUrlOf(this.connectionId);
    const socket = await this.host.factory({
      connectionId: this.connectionId,
      proxyUrl,
      auth: this.auth.state,
      getMessage: async (key) => (key.id ? this.host.store.getMessage(this.connectionId, key.id) : undefined),
      logger: this.host.logger,
      cachedGroupMetadata: (jid) => this.groupMetadata(jid),
      msgRetryCounterCache: this.retryCounters,
      ...(version && { version }),
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
    on("connection.update", (u) => this.onConnectionUpdate(socket, u, version));
    on("creds.update", async (update) => {
      Object.assign(this.auth!.state.creds, update);
      this.credsUnsaved = true;
      await this.saveCreds().catch(async (err: unknown) => {
        // Going on would leave the session on credentials a restart cannot find: close the socket,
        // count it, and make the save good before the next socket (connect()).
        this.host.logger.error({ err, connection_id: this.connectionId }, "baileys credentials could not be saved; closing the socket until they are");
        this.host.count("problem", "creds_save_failed");
        if (this.socket === socket) await Promise.resolve(socket.end(undefined)).catch(() => undefined);
      });
    });
    on("messages.upsert", (u) => this.onUpsert(u.messages));
    // One-to-one receipts come as messages.update (status codes); group receipts as message-receipt.update.
    on("messages.update", (updates) => this.onStatus(updates.map((u) => ({ key: u.key, status: statusOfCode(u.update.status), networkCode: u.update.messageStubParameters?.[0] ?? undefined }))));
    // Each member's receipt of a group message, with its own time; in the order they came (naming
    // a member may take a lookup, and a later receipt must not overtake an earlier one).
    on("message-receipt.update", (updates) =>
      this.inOrder(async () =>
        this.onStatus(await Promise.all(updates.map(async (u) => ({ key: u.key, ...ofReceipt(u.receipt), participant: u.receipt.userJid ? await this.phoneOf(u.receipt.userJid, undefined) : undefined })))),
      ),
    );
    on("presence.update", (u) => this.onPresence(u));
    on("lid-mapping.update", async (m) => this.mapLids([m]));
    // Membership and subject changes: the cached metadata is fetched again before the next send needs it.
    on("group-participants.update", async (u) => void (await this.onParticipants(u)));
    // A group made with the number in it (by itself or by someone else) comes whole: a join.
    on("groups.upsert", async (groups) => groups.forEach((g) => this.keepGroup(g, true)));
    on("groups.update", async (updates) => {
      // A listing (groupFetchAllParticipating: the group routes', or the library's on the network's
      // dirty bit) carries whole metadata: kept with no query per group, and reported unless the
      // group routes asked for it (they store the listing themselves; reported, it would read as joins).
      const asked = this.listing > 0;
      for (const u of updates) {
        if (!u.id) continue;
        if (u.participants) this.keepGroup(u as GroupMetadata, !asked);
        else await this.refreshGroup(u.id);
      }
    });
    // History sync carries the LID ↔ number pairs of the account's chats (its messages are history, not news).
    on("messaging-history.set", async (h) => this.mapLids(h.lidPnMappings ?? []));
    // The network asks for a passkey after the scan: the library acks the stanza and hangs.
    socket.ws?.on(PASSKEY_NOTIFICATION, () => {
      if (this.socket !== socket) return;
      void this.giveUp("passkey_required", false).catch((err: unknown) => this.host.logger.error({ err, connection_id: this.connectionId }, "baileys passkey handling failed"));
    });
  }

  /** Runs `task` after the tasks queued before it (a failed one does not stop the next). */
  private inOrder(task: () => Promise<void>): Promise<void> {
    const next = this.ordered.then(task);
    this.ordered = next.catch(() => undefined);
    return next;
  }

  /**
   * The send path's metadata of a group: the gateway's cache (PostgreSQL, group_metadata) first,
   * then this session's, then one network query shared by every send waiting on it.
   */
  private async groupMetadata(jid: string): Promise<GroupMetadata | undefined> {
    const stored = await cachedGroup(this.host.db.manager, this.connectionId, jid);
    if (stored) return libraryMetadata(stored);
    const cached = this.groups.get(jid);
    if (cached && Date.now() - cached.at < GROUP_CACHE_MS) return cached.metadata;
    return this.refreshGroup(jid);
  }

  /** Asks the network (once for concurrent callers), keeps the answer and reports it to the gateway's cache. */
  private refreshGroup(jid: string): Promise<GroupMetadata | undefined> {
    let pending = this.groupQueries.get(jid);
    if (pending) return pending;
    pending = (async () => {
      this.groups.delete(jid);
      const socket = this.socket;
      if (!socket) return undefined;
      // Not found or not answered: undefined lets the library query it itself.
      const metadata = await socket.groupMetadata(jid).catch(() => undefined);
      if (!metadata) return undefined;
      this.keepGroup(metadata, true);
      return metadata;
    })().finally(() => this.groupQueries.delete(jid));
    this.groupQueries.set(jid, pending);
    return pending;
  }

  /**
   * Who joined, left, was promoted or demoted: the group is fetched again, except when the number
   * itself left or was removed (the network no longer answers for the group): then the delta is
   * reported, which takes the group out of the gateway's cache.
   */
  private async onParticipants(u: BaileysEventMap["group-participants.update"]): Promise<void> {
    const me = { phone: phoneOfJid(this.socket?.user?.id), lid: lidOfJid(this.socket?.user?.lid) };
    const people = u.participants.map(participantOf);
    const mine = people.find((p) => (p.phone !== null && p.phone === me.phone) || (p.lid !== null && p.lid === me.lid));
    if (u.action !== "remove" || !mine) return void (await this.refreshGroup(u.id));
    this.groups.delete(u.id);
    // Named by our number, which is how the gateway knows its own number in a group.
    const participants = people.map((p) => (p === mine ? { phone: me.phone, lid: p.lid } : { phone: p.phone, lid: p.lid }));
    await this.report([{ type: "group.participants", group_id: u.id, action: "remove", participants }]);
  }

  /** Keeps a group's metadata for the send path, and reports it to the gateway's cache when `report`. */
  private keepGroup(metadata: GroupMetadata, report: boolean): void {
    this.groups.delete(metadata.id);
    if (this.groups.size >= GROUP_CACHE_SIZE) this.groups.delete(this.groups.keys().next().value!);
    this.groups.set(metadata.id, { metadata, at: Date.now() });
    if (report) void this.report([{ type: "group.metadata", group: groupReport(groupOf(metadata)) }]);
  }

  /** Every group the number is in (the group routes' listing, groups.ts). */
  async listGroups(): Promise<GroupMetadata[]> {
    const socket = this.openSocket();
    this.listing++;
    try {
      return Object.values(await socket.groupFetchAllParticipating());
    } finally {
      this.listing--;
    }
  }

  private async mapLids(mappings: { lid: string; pn: string }[]): Promise<void> {
    const pairs = mappings.flatMap((m) => {
      const lid = lidOfJid(m.lid);
      const phone = phoneOfJid(m.pn);
      return lid && phone ? [{ lid, phone }] : [];
    });
    if (pairs.length) await this.host.store.mapLids(this.connectionId, pairs);
  }

  /** Writes the credentials, retried as the library retries key writes; throws after the last attempt. */
  private async saveCreds(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.credsUnsaved = false;
        await this.auth!.saveCreds();
        return;
      } catch (err) {
        this.credsUnsaved = true;
        if (attempt >= CREDS_SAVE_ATTEMPTS || this.ended) throw err;
        this.host.logger.warn({ err, connection_id: this.connectionId, attempt }, "baileys credentials save failed; retrying");
        await new Promise((r) => setTimeout(r, this.host.credsSavePauseMs()));
      }
    }
  }

  /**
   * The connection cannot go on here for a reason the network gave: it reads `disconnected` with
   * the reason as detail, the socket closes and the session is given up (no reconnect, no other
   * process takes it up: it is not `connected`). `stillLinked`: the device link survives, so
   * resume reopens it.
   */
  private async giveUp(problem: Problem, stillLinked: boolean): Promise<void> {
    if (this.ended) return;
    this.problem = problem;
    this.host.count("problem", problem);
    this.host.logger.warn({ connection_id: this.connectionId, problem }, "baileys session given up");
    const socket = this.socket;
    this.ended = true;
    this.open = false;
    this.socket = null;
    clearTimeout(this.timer);
    for (const w of this.qrWaiters.splice(0)) w(null);
    if (socket) await Promise.resolve(socket.end(undefined)).catch(() => undefined);
    // Recorded before the lease goes: until then no other process may take the session up.
    await this.report([{ type: "connection.state", state: "disconnected", detail: problem, ...(stillLinked && { still_linked: true }) }]);
    this.host.forget(this);
  }

  /** No device is linked any more: the auth state goes, the connection reads disconnected, the session ends here. */
  private async unlinked(): Promise<void> {
    this.ended = true;
    await wipeSession(this.host.db, this.connectionId);
    await this.report([{ type: "connection.state", state: "disconnected" }]);
    this.host.forget(this);
  }

  /** True once the socket is open; false when it closed first or the time ran out. */
  opened(timeoutMs: number): Promise<boolean> {
    if (this.open) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.openWaiters.push((open) => {
        clearTimeout(timer);
        resolve(open);
      });
    });
  }

  /** The first QR (or code) of a pairing socket, or the latest one; null when the socket closed first. */
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

  private async onConnectionUpdate(socket: EngineSocket, u: Partial<BaileysEventMap["connection.update"]>, version: WAVersion | undefined): Promise<void> {
    // The network restricted the account or lifted it (its notice, or our question's answer).
    if (u.reachoutTimeLock) {
      if (u.reachoutTimeLock.isActive) this.host.count("problem", "account_restricted");
      await this.report([restrictionReport(u.reachoutTimeLock)]);
    }
    if (u.qr) {
      this.qrs += 1;
      if (this.qrs > MAX_QR_ROTATIONS) {
        // Nobody scanned: close, and let the connection be paired again.
        this.host.logger.info({ connection_id: this.connectionId }, "pairing QR not scanned; closing the socket");
        await this.end();
        await this.report([{ type: "connection.state", state: "disconnected" }]);
        this.host.forget(this);
        return;
      }
      // Pairing by code: the library can ask for one once the socket shows a QR, and a fresh one
      // at each rotation, so the code refreshes as the QR would.
      const shown = this.pairingPhone ? formatPairingCode(await socket.requestPairingCode(this.pairingPhone.replace(/\D/g, ""))) : u.qr;
      if (this.socket !== socket) return;
      this.latestQr = shown;
      await this.host.leases.setQr(this.connectionId, encrypt(this.host.secretKey, shown));
      for (const w of this.qrWaiters.splice(0)) w(shown);
    }
    if (u.connection === "open") {
      this.open = true;
      this.openedAt = Date.now();
      this.attempt = 0;
      this.qrs = 0;
      this.problem = null;
      this.latestQr = null;
      await this.host.leases.setQr(this.connectionId, null);
      const phone = phoneOfJid(socket.user?.id);
      const lid = lidOfJid(socket.user?.lid);
      if (phone && lid) await this.host.store.mapLids(this.connectionId, [{ lid, phone }]);
      for (const w of this.openWaiters.splice(0)) w(true);
      await this.report([{ type: "connection.state", state: "connected", ...(phone && { phone }) }]);
      // A restriction set or lifted while no socket was open is learned now.
      this.askRestriction(socket);
    }
    if (u.connection === "close") {
      this.open = false;
      this.socket = null;
      this.latestQr = null;
      for (const w of this.qrWaiters.splice(0)) w(null);
      for (const w of this.openWaiters.splice(0)) w(false);
      if (this.ended) return;
      const code = (u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode;
      if (code === DisconnectReason.loggedOut || code === DisconnectReason.forbidden) {
        // Unlinked on the phone (or banned): the auth state is worthless now, and pairing starts over.
        await this.unlinked();
        return;
      }
      if (code === DisconnectReason.connectionReplaced) {
        // Another socket took the number: never fight it (two sockets get the device logged out).
        // The link survives: pairing again, or suspend and resume, takes the number back here.
        await this.giveUp("replaced_elsewhere", true);
        return;
      }
      const linked = Boolean(this.auth?.state.creds.me);
      if (code === CLIENT_VERSION_REFUSED) {
        // The version went stale: the connection must not read `connected` meanwhile; fetch the
        // current one and try again with backoff.
        this.problem = "client_version_refused";
        this.host.count("problem", "client_version_refused");
        this.host.versionRefused(version);
        if (linked) await this.report([{ type: "connection.state", state: "disconnected", detail: "client_version_refused", still_linked: true }]);
        else {
          // A pairing socket: pairing answers 503 naming the refusal (engine.ts).
          this.ended = true;
          this.host.forget(this);
          return;
        }
      }
      // After a scan the library asks for a restart, at once; a restart asked again and again backs off.
      if (this.openedAt && Date.now() - this.openedAt > STEADY_MS) this.restarts = 0;
      const delay = code === DisconnectReason.restartRequired && this.restarts++ === 0 ? 0 : reconnectDelay(this.attempt++);
      this.host.count("reconnect");
      this.timer = setTimeout(() => void this.connect().catch((err: unknown) => this.retryLater(err)), delay);
    }
  }

  private retryLater(err: unknown): void {
    this.host.logger.warn({ err, connection_id: this.connectionId }, "baileys reconnect failed");
    if (this.ended) return;
    this.timer = setTimeout(() => void this.connect().catch((e: unknown) => this.retryLater(e)), reconnectDelay(this.attempt++));
  }

  private report(events: Report[]): Promise<void> {
    return this.host.report(this.connectionId, events);
  }

  /** What the socket received or the phone wrote. */
  private async onUpsert(messages: WAMessage[]): Promise<void> {
    await this.host.store.mapLids(this.connectionId, messages.flatMap((m) => lidPairs(m.key)));
    const events: Report[] = [];
    const statuses: StatusUpdate[] = [];
    for (const msg of messages) {
      const { key } = msg;
      if (!key.id || !key.remoteJid || isIgnoredJid(key.remoteJid)) continue;
      const action = chatAction(msg.message);
      if (action) {
        const report = key.fromMe ? null : await this.actionReport(msg, action);
        if (report) events.push(report);
        continue;
      }
      const content = messageContent(msg.message);
      if (!content) {
        if (key.fromMe) statuses.push(...mergedReceipts(msg));
        continue;
      }
      const at = messageTime(msg);
      const group = isGroupJid(key.remoteJid) ? key.remoteJid : undefined;
      // Its media keys, sealed, for GET /v1/messages/{id}/media (downloaded and decrypted on demand).
      if (content.media && !key.fromMe && msg.message) await this.host.store.saveMessage(this.connectionId, key.id, msg.message);
      if (key.fromMe) {
        // Our own sends come back as upserts too; only what the phone wrote is news. Receipts
        // that came while the library buffered are merged into the upserted message itself.
        if (await this.host.store.known(this.connectionId, key.id)) {
          statuses.push(...mergedReceipts(msg));
          continue;
        }
        const to = group ? undefined : (await this.contactOf(key.remoteJid, key.remoteJidAlt)).address;
        events.push({ type: "message.outbound_from_phone", event_id: `bly_out_${key.id}`, provider_message_id: key.id, ...(group ? { group } : { to }), ...content, timestamp: at.toISOString() });
        continue;
      }
      const from = group ? await this.contactOf(key.participant, key.participantAlt) : await this.contactOf(key.remoteJid, key.remoteJidAlt);
      const me = phoneOfJid(this.socket?.user?.id);
      events.push({
        type: "message.inbound",
        event_id: `bly_in_${key.id}`,
        provider_message_id: key.id,
        from: from.address,
        ...(from.lid && { from_lid: from.lid }),
        ...(me && { to: me }),
        ...(group && { group }),
        ...content,
        timestamp: at.toISOString(),
      });
    }
    if (events.length) await this.report(events);
    if (statuses.length) await this.onStatus(statuses);
  }

  /**
   * How we report a contact: by phone number where known (the key's alternate form, our map, the
   * library's own LID store), else by `lid:<digits>`, a valid `to` that reaches them; with the
   * LID beside it when they have one.
   */
  private async contactOf(jid: string | null | undefined, alt: string | null | undefined): Promise<{ address: string; lid: string | null }> {
    const lidJid = lidOfJid(jid) ?? lidOfJid(alt);
    const lid = lidAddress(lidJid);
    let phone = phoneOfJid(jid) ?? phoneOfJid(alt);
    if (!phone && lidJid) {
      phone = (await this.host.store.phoneOfLid(this.connectionId, lidJid)) ?? null;
      if (!phone) {
        const pn = await this.socket?.signalRepository?.lidMapping?.getPNForLID(lidJid).catch(() => null);
        phone = phoneOfJid(pn);
        if (phone) await this.host.store.mapLids(this.connectionId, [{ lid: lidJid, phone }]);
      }
    }
    return { address: (phone ?? lid ?? jid ?? "unknown").slice(0, 40), lid };
  }

  /** A contact's reaction, edit, revoke or poll vote, as our report (a vote we cannot decrypt is dropped). */
  private async actionReport(msg: WAMessage, action: ChatAction): Promise<Report | null> {
    const { key } = msg;
    const group = isGroupJid(key.remoteJid);
    const from = group ? await this.phoneOf(key.participant, key.participantAlt) : await this.phoneOf(key.remoteJid, key.remoteJidAlt);
    const base = { event_id: `bly_act_${key.id}`, provider_message_id: action.provider_message_id, from, timestamp: messageTime(msg).toISOString() };
    if (action.type !== "message.poll_vote") {
      const { provider_message_id: _p, ...rest } = action;
      return { ...rest, ...base };
    }
    const poll = await this.host.store.getMessage(this.connectionId, action.provider_message_id);
    const creation = poll?.pollCreationMessage ?? poll?.pollCreationMessageV2 ?? poll?.pollCreationMessageV3;
    const secret = poll?.messageContextInfo?.messageSecret;
    const me = this.socket?.user?.id;
    if (!creation || !secret || !me) return null;
    try {
      const options = votedOptions(action.poll.update, {
        options: (creation.options ?? []).map((o) => o.optionName ?? ""),
        secret,
        creatorJid: jidNormalizedUser(me),
        pollId: action.provider_message_id,
        voterJid: jidNormalizedUser((group ? key.participant : key.remoteJid) ?? ""),
      });
      return { type: "message.poll_vote", options, ...base };
    } catch (err) {
      this.host.logger.warn({ err, connection_id: this.connectionId }, "baileys poll vote not decrypted; dropped");
      return null;
    }
  }

  /** A contact typing, recording or pausing in a chat. */
  private async onPresence(update: BaileysEventMap["presence.update"]): Promise<void> {
    const group = isGroupJid(update.id) ? update.id : undefined;
    const events: Report[] = [];
    for (const [participant, data] of Object.entries(update.presences)) {
      const state = presenceState(data.lastKnownPresence);
      if (!state) continue;
      const from = await this.phoneOf(participant, undefined);
      events.push({ type: "chat.presence", from, ...(group && { group }), state, timestamp: new Date().toISOString() });
    }
    if (events.length) this.report(events);
  }

  /** The open socket, or a transient EngineError. */
  private openSocket(): EngineSocket {
    const socket = this.socket;
    if (!socket || !this.open) throw new EngineError("the session is not open (connecting or reconnecting)", false, "session_not_open");
    return socket;
  }

  /** The open socket for a group call (groups.ts), or a transient EngineError. */
  groupSocket(): EngineSocket {
    return this.openSocket();
  }

  /** Writes an action (a reaction, an edit, a delete for everyone) to the chat of its message. */
  async act(target: MessageRef, content: AnyMessageContent): Promise<void> {
    await this.openSocket()
      .sendMessage(chatJid(target.chat), content)
      .catch((err: unknown) => {
        throw new EngineError(`the network did not take it: ${err instanceof Error ? err.message : String(err)}`, false, "network_send_failed");
      });
  }

  async markRead(targets: MessageRef[]): Promise<void> {
    await this.openSocket().readMessages(targets.map(messageKey));
  }

  async sendPresence(chat: Recipient, state: PresenceState): Promise<void> {
    await this.openSocket().sendPresenceUpdate(libraryPresence(state), chatJid(chat));
  }

  /** A received message's media, from its sealed media keys; `media_gone` when they are gone or the network no longer has it. */
  async downloadMedia(target: MessageRef, maxBytes: number): Promise<Readable> {
    const socket = this.openSocket();
    const stored = await this.host.store.getMessage(this.connectionId, target.providerMessageId);
    if (!stored) throw new EngineError("the media's keys are no longer kept", true, "media_gone");
    try {
      return capStream(await socket.downloadMedia({ key: messageKey(target), message: stored }), maxBytes);
    } catch (err) {
      const status = (err as { output?: { statusCode?: number }; status?: number }).output?.statusCode ?? (err as { status?: number }).status;
      if (status === 404 || status === 410) throw new EngineError("the network no longer has this media", true, "media_gone");
      throw new EngineError(`the media could not be downloaded: ${err instanceof Error ? err.message : String(err)}`, false, "media_fetch_failed");
    }
  }

  /** How a contact is named in a report: its number where known, else `lid:<digits>` (contactOf). */
  private async phoneOf(jid: string | null | undefined, alt: string | null | undefined): Promise<string> {
    return (await this.contactOf(jid, alt)).address;
  }

  /**
   * Asks the network whether the account is restricted (one question at a time); the answer comes
   * back as a connection update. A 463 ack may mean a restriction (or only a contact's missing
   * privacy token): the library does not ask itself, so the session does.
   */
  private askRestriction(socket: EngineSocket): void {
    if (this.askingRestriction) return;
    this.askingRestriction = true;
    void socket
      .fetchAccountReachoutTimelock()
      .catch((err: unknown) => this.host.logger.warn({ err, connection_id: this.connectionId }, "baileys restriction question not answered"))
      .finally(() => (this.askingRestriction = false));
  }

  /** Acknowledgements and receipts of our messages. */
  private async onStatus(updates: StatusUpdate[]): Promise<void> {
    const relevant = updates.filter((u) => u.key.fromMe && u.key.id && u.status);
    if (!relevant.length) return;
    if (this.socket && relevant.some((u) => u.status === "failed" && u.networkCode === RESTRICTION_ACK)) this.askRestriction(this.socket);
    const ours = await this.host.store.ourIds(this.connectionId, relevant.map((u) => u.key.id!));
    // Stamped with the receipt's own time where the network gives one (receipts that waited
    // offline are hours old); one-to-one status updates carry none.
    const now = new Date().toISOString();
    const events: Report[] = [];
    for (const u of relevant) {
      const messageId = ours.get(u.key.id!);
      if (!messageId) continue;
      this.host.count("receipt", u.status!);
      events.push({
        type: "message.status",
        // One per status, and per member for a group's receipts.
        event_id: `bly_st_${u.key.id}_${u.status}${u.participant ? `_${u.participant}` : ""}`,
        message_id: messageId,
        provider_message_id: u.key.id!,
        status: u.status!,
        ...(u.status === "failed" && { error: networkError(u.networkCode) }),
        ...(u.participant && { participant: u.participant }),
        timestamp: u.at?.toISOString() ?? now,
      });
    }
    if (events.length) await this.report(events);
  }

  /** Writes our message to the socket under the network id derived from ours. */
  async send(message: OutboundMessage): Promise<{ providerMessageId: string }> {
    const networkId = networkMessageId(this.host.secretKey, message.messageId);
    // Written and recorded before (a hand-off retried after the answer was lost): nothing to do.
    if (await this.host.store.recorded(this.connectionId, networkId)) return { providerMessageId: networkId };
    const socket = this.socket;
    if (!socket || !this.open) throw new EngineError("the session is not open (connecting or reconnecting)", false, "session_not_open");
    // A number the network does not know: nothing is written (the network would take the message
    // and deliver it to nobody); it ends `failed`, reported as the sandbox reports it, after the
    // hand-off. A check that cannot answer lets the network decide.
    const phone = phoneOfJid(recipientJid(message.to));
    if (phone && (await this.numberCheck(phone)).onNetwork === false) {
      this.host.count("send", "not_on_network");
      void this.report([
        {
          type: "message.status",
          event_id: `bly_st_${networkId}_failed`,
          message_id: message.messageId,
          provider_message_id: networkId,
          status: "failed",
          error: { code: "not_on_network", message: `${phone} is not on the network` },
          timestamp: new Date().toISOString(),
        },
      ]).catch(() => undefined);
      return { providerMessageId: networkId };
    }
    const media = message.media ? await this.fetch(message.media) : null;
    await this.host.store.intend(this.connectionId, networkId, message.messageId);
    const content = message.poll ? pollContent(message.poll) : outboundContent(message.body, media, message.location);
    const quoted = message.quoted ? quotedMessage(message.quoted, await this.host.store.getMessage(this.connectionId, message.quoted.providerMessageId)) : undefined;
    const sent = await socket
      .sendMessage(recipientJid(message.to), content, { messageId: networkId, ...(quoted && { quoted }) })
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

  /** A day's remembered answer, else the network's (remembered when it gave one). */
  async numberCheck(phone: string): Promise<NumberCheck> {
    const known = await this.host.numberChecks.get(this.connectionId, phone);
    if (known !== null) return { checked: true, onNetwork: known };
    const check = await this.askNetwork(phone);
    if (check.checked && check.onNetwork !== null) await this.host.numberChecks.remember(this.connectionId, phone, check.onNetwork);
    return check;
  }

  /** Asks the network, in this session's turn (checks are throttled: number-checks.ts). */
  private async askNetwork(phone: string): Promise<NumberCheck> {
    if (!this.socket || !this.open) return { checked: false, onNetwork: null };
    const started = Date.now();
    if (!(await this.checks.turn(CHECK_TIMEOUT_MS))) return { checked: false, onNetwork: null };
    const socket = this.socket;
    if (!socket || !this.open) return { checked: false, onNetwork: null };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), Math.max(0, CHECK_TIMEOUT_MS - (Date.now() - started)))));
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

type Status = "sent" | "delivered" | "read" | "failed";
interface StatusUpdate {
  key: { id?: string | null; fromMe?: boolean | null };
  status: Status | null;
  /** When the receipt says it happened. */
  at?: Date | undefined;
  /** The network's error code of a failed message (the library's messageStubParameters[0]). */
  networkCode?: string | undefined;
  /** A group member's receipt: the member, as reports name contacts. */
  participant?: string | undefined;
}

type Seconds = number | { toString(): string } | null | undefined;

/** A receipt's status and its own time (the library's seconds, possibly a Long). */
function ofReceipt(receipt: { readTimestamp?: Seconds; receiptTimestamp?: Seconds; playedTimestamp?: Seconds }): { status: Status | null; at?: Date } {
  const read = receipt.readTimestamp ?? receipt.playedTimestamp;
  const seconds = read ?? receipt.receiptTimestamp;
  const status = read ? "read" : receipt.receiptTimestamp ? "delivered" : null;
  const n = seconds ? Number(seconds.toString()) : 0;
  return n > 0 ? { status, at: new Date(n * 1000) } : { status };
}

/** The statuses the library merged into a buffered upsert of our own message (its status, its receipts). */
function mergedReceipts(msg: WAMessage): StatusUpdate[] {
  const out: StatusUpdate[] = [];
  const status = statusOfCode(msg.status);
  if (status) out.push({ key: msg.key, status });
  for (const r of msg.userReceipt ?? []) {
    const receipt = ofReceipt(r);
    if (receipt.status) out.push({ key: msg.key, ...receipt });
  }
  return out;
}
