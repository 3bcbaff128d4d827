// The Baileys engine: connections on the real network through the library's linked-device socket.
// Each connection's socket lives in exactly one gateway process, the holder of its lease
// (lease.ts); this process renews its leases, gives up the sessions whose connection no longer
// wants one, and takes up linked connections nobody holds. Reports go through the same provider
// callback code as the HTTP route (ProviderCallbackService), in process: the engine already shares
// the gateway's database, and a loopback HTTP hop would only add a way to fail (BASE_URL is often
// not reachable from inside the host) without adding a check the service does not already make.
import type { WAVersion } from "@whiskeysockets/baileys";
import type { DataSource } from "typeorm";
import { ProviderCallbackBody, type Media, type PresenceState, type Recipient } from "../../../contract/index.js";
import { callbackToken } from "../../connections/callback-token.js";
import { Connection } from "../../connections/entities.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { ProviderCallbackService } from "../../provider/service.js";
import { decrypt, randomToken } from "../../secrets.js";
import type { UrlCheckOptions } from "../../outbound/address-policy.js";
import { EngineError, type Engine, type EngineConnection, type MediaDownload, type MessageRef, type NumberCheck, type OutboundMessage, type Pace, type PairingRequest } from "../engine.js";
import { editContent, reactionContent, revokeContent } from "./conversations.js";
import { loadAuthState, wipeSession } from "./auth-state.js";
import { BaileysGroups } from "./groups.js";
import { Leases } from "./lease.js";
import { NumberCheckCache } from "./number-checks.js";
import { Relay } from "./relay.js";
import { CREDS_SAVE_PAUSE_MS, Session, type Report, type SessionHost } from "./session.js";
import { loadSocketFactory, parseVersion, type SocketFactory, type VersionSource } from "./socket.js";
import { ReportSpool } from "./spool.js";
import { SessionStore } from "./store.js";

export const BAILEYS_ENGINE = "baileys";
/** How long pairing waits for the socket's first QR before answering 503. */
const FIRST_QR_TIMEOUT_MS = 20_000;
/** Sessions taken up per poll, so that a restart does not open hundreds of sockets at once. */
const TAKE_UP_PER_POLL = 20;
/** After a full batch of take-ups, the next poll comes this soon: 300 sockets are taken up within a minute. */
const TAKE_UP_AGAIN_MS = 1_000;
/** How often a pair (or an unlink) made on a process that does not hold the socket looks again. */
const PAIR_ELSEWHERE_POLL_MS = 250;
/** How long an unlink waits for a socket opened only to unlink. */
const UNLINK_OPEN_TIMEOUT_MS = 8_000;
/** A refused client version is fetched again at most this often. */
const VERSION_REFETCH_MS = 60_000;
/** How long shutdown waits for reports in flight; what is left stays spooled for the next start. */
const CLOSE_REPORTS_MS = 5_000;
/** How often a process prunes the message store of entries too old for retry requests. */
const PRUNE_EVERY_MS = 60 * 60_000;

export interface BaileysOptions {
  db: DataSource;
  /** Where the engine's reports go, in process: the same code as the HTTP callback route. */
  callbacks: ProviderCallbackService;
  secretKey: Buffer;
  logger: Logger;
  metrics: Metrics;
  mediaPolicy: UrlCheckOptions;
  leaseSeconds: number;
  /** Milliseconds between two sends of one connection relayed for another process (its pace). */
  relaySpacingMs: number;
  /** BAILEYS_SOCKET_MODULE (never in production): a module whose createSocket replaces the library's. */
  socketModule?: string | undefined;
  /** BAILEYS_WA_VERSION: the client version to present, never fetched. */
  waVersion?: string | undefined;
  /** Where reports wait until they are applied (DATA_DIR/baileys-reports). */
  spoolDir: string;
  /** BAILEYS_PROXY_URL: the proxy of every connection that sets none of its own. */
  defaultProxyUrl?: string | undefined;
  /** BAILEYS_PACE_MS: the spacing of one connection's messages (default one every 2-5 s). */
  pace?: Pace | undefined;
}

/** One message every 2-5 s per number, with jitter: what peers' users found a number survives. */
export const BAILEYS_DEFAULT_PACE: Pace = { minMs: 2_000, maxMs: 5_000 };

export class BaileysEngine implements Engine {
  readonly name = BAILEYS_ENGINE;
  readonly pace: Pace;
  readonly leases: Leases;
  private readonly sessions = new Map<string, Session>();
  private readonly host: SessionHost;
  private readonly relay: Relay;
  readonly spool: ReportSpool;
  /** Pauses, here so that tests can shorten them. */
  readonly tuning = { credsSavePauseMs: CREDS_SAVE_PAUSE_MS, versionRefetchMs: VERSION_REFETCH_MS };
  /** When a refusal last made the version be fetched again. */
  private refetchedAt = 0;
  private readonly numberChecks: NumberCheckCache;
  /** Group calls go to the socket of this process, as conversations' actions do. */
  readonly groups = new BaileysGroups((connection) => this.local(connection));
  private factory: SocketFactory | null = null;
  private fetchVersion: VersionSource | null = null;
  private readonly pinnedVersion: WAVersion | undefined;
  private currentVersion: WAVersion | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** When the leases were last renewed: past it plus the lease period minus a margin, sockets close. */
  private renewedAt = 0;
  private prunedAt = 0;
  private polling: Promise<void> = Promise.resolve();

  constructor(private readonly options: BaileysOptions) {
    this.pace = options.pace ?? BAILEYS_DEFAULT_PACE;
    this.numberChecks = new NumberCheckCache(options.db);
    this.leases = new Leases(options.db, options.leaseSeconds);
    this.pinnedVersion = options.waVersion ? parseVersion(options.waVersion) : undefined;
    this.spool = new ReportSpool(options.spoolDir, (id, body) => this.apply(id, body), options.logger);
    // Relayed messages had their slot reserved by the process that handed them off (the dispatcher's
    // shared pace); the holder writes them no closer together than the pace's floor, so a relay
    // drained at a lease poll never bursts.
    this.relay = new Relay(options.db, options.secretKey, Math.max(options.relaySpacingMs, this.pace.minMs), (id, events) => this.report(id, events), options.logger);
    this.host = {
      db: options.db,
      secretKey: options.secretKey,
      logger: options.logger,
      store: new SessionStore(options.db, options.secretKey),
      leases: this.leases,
      numberChecks: this.numberChecks,
      factory: (socketOptions) => this.socketFactory()(socketOptions),
      mediaPolicy: options.mediaPolicy,
      proxyUrlOf: (id) => this.proxyUrlOf(id),
      report: (id, events) => this.report(id, events),
      forget: (session) => this.forget(session),
      version: () => this.pinnedVersion ?? this.currentVersion,
      versionRefused: (version) => this.refreshVersion(version),
      credsSavePauseMs: () => this.tuning.credsSavePauseMs,
      count: (metric, label) => {
        if (metric === "reconnect") options.metrics.engineReconnects.inc({ engine: BAILEYS_ENGINE });
        else if (metric === "problem") options.metrics.engineProblems.inc({ engine: BAILEYS_ENGINE, reason: label ?? "unknown" });
        else if (metric === "send") options.metrics.engineSends.inc({ engine: BAILEYS_ENGINE, outcome: label ?? "written" });
        else options.metrics.engineReceipts.inc({ engine: BAILEYS_ENGINE, status: label ?? "unknown" });
      },
    };
  }

  /** The connection's own proxy (sealed in its row), else the gateway's default; read at every socket open. */
  private async proxyUrlOf(connectionId: string): Promise<string | undefined> {
    const [row] = (await this.options.db.query(`SELECT proxy_url_sealed FROM connections WHERE id = $1`, [connectionId])) as { proxy_url_sealed: string | null }[];
    return row?.proxy_url_sealed ? decrypt(this.options.secretKey, row.proxy_url_sealed) : this.options.defaultProxyUrl;
  }

  private socketFactory(): SocketFactory {
    if (!this.factory) throw new Error("the baileys engine is not open");
    return this.factory;
  }

  async open(): Promise<void> {
    ({ factory: this.factory, fetchVersion: this.fetchVersion } = await loadSocketFactory(this.options.socketModule));
    // What a process that died left unapplied is taken up first.
    this.spool.open();
    if (!this.pinnedVersion) await this.refreshVersion(undefined);
    this.running = true;
    this.renewedAt = Date.now();
    this.startWatchdog();
    this.polling = this.poll();
    await this.polling;
  }

  /**
   * The network's current client version (at start, and when it refused the one in use; at most
   * once a minute); when it cannot be fetched, the library's built-in one stays in use.
   */
  private async refreshVersion(refused: WAVersion | undefined): Promise<void> {
    if (this.pinnedVersion || !this.fetchVersion) return;
    if (refused) {
      // Every socket presenting the refused version reports it: one fetch for them all.
      if (refused !== this.currentVersion || Date.now() - this.refetchedAt < this.tuning.versionRefetchMs) return;
      this.refetchedAt = Date.now();
    }
    try {
      this.currentVersion = await this.fetchVersion();
      this.options.logger.info({ version: this.currentVersion.join(".") }, "baileys client version fetched");
    } catch (err) {
      // Expected where the network is out of reach: the reason in one line, not a stack at every start.
      this.options.logger.warn({ reason: err instanceof Error ? err.message : String(err) }, "baileys client version could not be fetched; keeping the one in use");
    }
  }

  /**
   * Independent of the poll (whose renewal may hang on a database that stopped answering): when
   * the leases were not renewed for half a lease period, the sockets close, so that they are
   * closed before another process can take the leases over.
   */
  private startWatchdog(): void {
    const periodMs = (this.options.leaseSeconds * 1000) / 8;
    this.watchdog = setInterval(() => {
      if (!this.running || Date.now() - this.renewedAt <= (this.options.leaseSeconds * 1000) / 2 || !this.sessions.size) return;
      this.options.logger.error({ since_ms: Date.now() - this.renewedAt }, "baileys leases not renewed in time; closing this process's sockets");
      const sessions = [...this.sessions.values()];
      this.sessions.clear();
      void Promise.all(sessions.map((s) => s.end()));
    }, periodMs);
    this.watchdog.unref();
  }

  /** Closes every socket of this process and hands its leases back, so another takes them at once. */
  async close(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    clearInterval(this.watchdog);
    // A poll under way may be opening sockets: let it finish, then close what it opened too.
    await this.polling;
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map(async (s) => {
      await s.end();
      await this.leases.release(s.connectionId).catch(() => undefined);
    }));
    await this.leases.leave().catch(() => undefined);
    await this.spool.close(CLOSE_REPORTS_MS);
  }

  private schedulePoll(delayMs = (this.options.leaseSeconds * 1000) / 4): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll();
    }, delayMs);
  }

  /** Every quarter lease period: renew, give up what is no longer ours, take up what nobody holds. */
  private async poll(): Promise<void> {
    let soon = false;
    try {
      const started = Date.now();
      const verdicts = await this.leases.renew([...this.sessions.keys()]);
      this.renewedAt = started;
      for (const [id, verdict] of verdicts) {
        const session = this.sessions.get(id);
        if (!session || verdict === "keep") continue;
        this.sessions.delete(id);
        if (verdict === "logout") await session.logout();
        else await session.end();
      }
      if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
        this.prunedAt = Date.now();
        await this.host.store.pruneMessages();
      }
      if (this.running) {
        this.spool.adopt();
        // Each process holds up to its fair share (lease.ts): a surplus is handed back, room taken up.
        const { share } = await this.leases.census(BAILEYS_ENGINE);
        await this.handBack(this.sessions.size - share);
        const room = Math.min(TAKE_UP_PER_POLL, share - this.sessions.size);
        const orphans = room > 0 ? await this.leases.orphans(BAILEYS_ENGINE, room) : [];
        for (const id of orphans) {
          if (!this.sessions.has(id) && (await this.leases.acquire(id))) await this.take(id);
        }
        // More may be waiting (a start, a process gone): the next batch follows soon, not a quarter lease later.
        soon = orphans.length === TAKE_UP_PER_POLL;
        this.relay.drain(this.sessions);
        await this.answerPairingAsks();
      }
    } catch (err) {
      this.options.logger.error({ err }, "baileys lease poll failed");
      // Unable to renew: before the leases can lapse, close the sockets (never two for a number).
      if (Date.now() - this.renewedAt > (this.options.leaseSeconds * 1000) / 2) {
        const sessions = [...this.sessions.values()];
        this.sessions.clear();
        await Promise.all(sessions.map((s) => s.end()));
      }
    }
    this.schedulePoll(soon ? TAKE_UP_AGAIN_MS : undefined);
  }

  /**
   * Gives `count` sockets beyond this process's share back: each is closed first and its lease
   * released after, so the process that takes it up opens its socket only once this one is
   * closed. Pairing sessions stay; the latest taken go first.
   */
  private async handBack(count: number): Promise<void> {
    if (count <= 0) return;
    const surplus = [...this.sessions.values()].filter((s) => !s.pairing).slice(-count);
    for (const s of surplus) this.sessions.delete(s.connectionId);
    await Promise.all(
      surplus.map(async (s) => {
        await s.end();
        await this.leases.release(s.connectionId);
      }),
    );
    if (surplus.length) this.options.logger.info({ handed_back: surplus.length, held: this.sessions.size }, "baileys sockets over this process's share handed back");
  }

  private async take(connectionId: string, pairing: Session["pairing"] = null): Promise<Session> {
    const session = new Session(this.host, connectionId, pairing);
    this.sessions.set(connectionId, session);
    await session.connect().catch((err: unknown) => {
      this.options.logger.error({ err, connection_id: connectionId }, "baileys socket could not be opened");
    });
    return session;
  }

  private forget(session: Session): void {
    if (this.sessions.get(session.connectionId) === session) this.sessions.delete(session.connectionId);
    void this.leases.release(session.connectionId).catch(() => undefined);
  }

  /**
   * A fresh socket with fresh credentials; its first QR (or, pairing by code, the code the library
   * asks for once the socket shows a QR) is the payload. Later ones replace it.
   */
  async startPairing(connection: EngineConnection, request: PairingRequest): Promise<{ payload: string }> {
    const pairingPhone = request.method === "code" ? request.phone : null;
    const existing = this.sessions.get(connection.id);
    if (existing?.pairing && !existing.isOpen && existing.pairingPhone === pairingPhone) {
      const qr = await existing.nextQr(FIRST_QR_TIMEOUT_MS);
      if (qr) return { payload: qr };
    }
    // Another process holds the socket (often the pairing socket of an earlier pair): it pairs.
    if (!(await this.leases.acquire(connection.id))) return { payload: await this.pairElsewhere(connection.id, pairingPhone) };
    if (existing) {
      this.sessions.delete(connection.id);
      await existing.end();
    }
    await wipeSession(this.options.db, connection.id);
    const session = await this.take(connection.id, { phone: pairingPhone });
    const qr = await session.nextQr(FIRST_QR_TIMEOUT_MS);
    if (!qr) {
      if (this.sessions.get(connection.id) === session) this.sessions.delete(connection.id);
      await session.end();
      await this.leases.release(connection.id);
      if (session.problem === "client_version_refused") {
        throw new EngineError("the network refuses the client version in use (client_version_refused); a current one is being fetched, try again shortly", false, "transport_unavailable");
      }
      if (session.problem) throw new EngineError(`the network did not offer a pairing code (${session.problem})`, false, "transport_unavailable");
      throw new EngineError("the network did not offer a pairing code", false, "transport_unavailable");
    }
    return { payload: qr };
  }

  /**
   * Pairing through the process that holds the connection's socket: asked through its lease row,
   * taken up at its next poll, answered with the payload its socket shows.
   */
  private async pairElsewhere(connectionId: string, phone: string | null): Promise<string> {
    const id = randomToken(12);
    if (!(await this.leases.askPairing(connectionId, { id, phone }))) {
      throw new EngineError("another gateway process was handing this connection's session over; try again shortly", false, "connection_elsewhere");
    }
    const deadline = Date.now() + (this.options.leaseSeconds * 1000) / 4 + FIRST_QR_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const answer = await this.leases.pairingAnswer(connectionId, id);
      if (answer === "failed") throw new EngineError("the network did not offer a pairing code to the process holding this connection's session", false, "transport_unavailable");
      if (answer) return decrypt(this.options.secretKey, answer.sealed);
      await new Promise((r) => setTimeout(r, PAIR_ELSEWHERE_POLL_MS));
    }
    throw new EngineError("the gateway process holding this connection's session did not answer in time; try again shortly", false, "connection_elsewhere");
  }

  /** Pairings other processes asked of this one (pairElsewhere): started here, answered through the lease row. */
  private async answerPairingAsks(): Promise<void> {
    for (const { connectionId, request } of await this.leases.pairingAsks()) {
      const pairing = request.phone ? { method: "code" as const, phone: request.phone } : { method: "qr" as const };
      void this.startPairing({ id: connectionId, callbackUrl: "" }, pairing)
        .then(() => this.leases.answerPairing(connectionId, request.id, true))
        .catch(async (err: unknown) => {
          this.options.logger.warn({ err, connection_id: connectionId }, "baileys pairing asked by another process failed");
          await this.leases.answerPairing(connectionId, request.id, false).catch(() => undefined);
        });
    }
  }

  /** The QR the pairing socket shows now, on whichever process holds it. */
  async currentPairing(connection: EngineConnection): Promise<string | null> {
    const sealed = await this.leases.qr(connection.id);
    return sealed ? decrypt(this.options.secretKey, sealed) : null;
  }

  async send(connection: EngineConnection, message: OutboundMessage): Promise<{ providerMessageId: string }> {
    const session = this.sessions.get(connection.id);
    if (session) return session.send(message);
    // Another process holds the socket: the message reaches it through the database (relay.ts).
    if (await this.leases.holderOf(connection.id)) return this.relay.enqueue(connection.id, message);
    throw new EngineError("the session is being taken up", false, "session_not_open");
  }

  // Conversation actions go to the socket of this process (server/engines/baileys/conversations.ts);
  // while another process holds it they fail transiently and the caller retries.
  react(connection: EngineConnection, target: MessageRef, emoji: string): Promise<void> {
    return this.local(connection).act(target, reactionContent(target, emoji));
  }

  edit(connection: EngineConnection, target: MessageRef, body: string): Promise<void> {
    return this.local(connection).act(target, editContent(target, body));
  }

  revoke(connection: EngineConnection, target: MessageRef): Promise<void> {
    return this.local(connection).act(target, revokeContent(target));
  }

  markRead(connection: EngineConnection, targets: MessageRef[]): Promise<void> {
    return this.local(connection).markRead(targets);
  }

  sendPresence(connection: EngineConnection, chat: Recipient, state: PresenceState): Promise<void> {
    return this.local(connection).sendPresence(chat, state);
  }

  async downloadMedia(connection: EngineConnection, target: MessageRef, media: Media, maxBytes: number): Promise<MediaDownload> {
    const stream = await this.local(connection).downloadMedia(target, maxBytes);
    return { stream, mimetype: media.mimetype ?? "application/octet-stream", filename: media.filename ?? null, size: null };
  }

  private local(connection: EngineConnection): Session {
    const session = this.sessions.get(connection.id);
    if (!session) throw new EngineError("the session is not open on this process (another holds it, or it is being taken up)", false, "session_not_open");
    return session;
  }

  /** A day's remembered answer from any process; else the network, through this process's socket. */
  async checkNumber(connection: EngineConnection, phone: string): Promise<NumberCheck> {
    const session = this.sessions.get(connection.id);
    if (session) return session.numberCheck(phone);
    const known = await this.numberChecks.get(connection.id, phone);
    return known === null ? { checked: false, onNetwork: null } : { checked: true, onNetwork: known };
  }

  /**
   * Deleted: unlink the device. The holder of the socket does it (this process now, another at its
   * next poll); when nobody holds one (suspended, replaced elsewhere, its holder gone), a socket is
   * opened with the stored credentials only to unlink, so that the phone does not keep a dead device.
   */
  async logout(connection: EngineConnection): Promise<void> {
    let session = this.sessions.get(connection.id);
    this.sessions.delete(connection.id);
    session ??= (await this.unlinkingSession(connection.id)) ?? undefined;
    if (session) await session.logout();
    await wipeSession(this.options.db, connection.id);
    await this.leases.release(connection.id);
  }

  /**
   * A session opened with the stored credentials only to unlink, once this process holds the
   * lease; null when no device is linked or a live holder unlinks it. The credentials are read
   * first: the delete's purge wipes them from the database shortly after. A live holder drops the
   * lease row at its next poll and unlinks itself; the lease of a holder that died is waited out
   * (a lease period at most), never taken early: two sockets get the device logged out.
   */
  private async unlinkingSession(connectionId: string): Promise<Session | null> {
    const linked = await loadAuthState(this.options.db, this.options.secretKey, connectionId);
    if (!linked.state.creds.me) return null;
    const deadline = Date.now() + this.options.leaseSeconds * 1000 + UNLINK_OPEN_TIMEOUT_MS;
    for (let first = true; ; first = false) {
      const claimed = await this.leases.claim(connectionId);
      // Free after someone held it: that holder dropped it at its poll, and unlinks.
      if (claimed === "free" && !first) {
        await this.leases.release(connectionId);
        return null;
      }
      if (claimed) break;
      if (Date.now() > deadline || !this.running) {
        this.options.logger.warn({ connection_id: connectionId }, "baileys device not unlinked here: another process still holds its lease");
        return null;
      }
      await new Promise((r) => setTimeout(r, PAIR_ELSEWHERE_POLL_MS));
    }
    const session = new Session(this.host, connectionId, null, linked);
    await session.connect().catch((err: unknown) => this.options.logger.warn({ err, connection_id: connectionId }, "baileys socket to unlink could not be opened"));
    if (!(await session.opened(UNLINK_OPEN_TIMEOUT_MS))) this.options.logger.warn({ connection_id: connectionId }, "baileys device not unlinked: the socket did not open");
    return session;
  }

  /** Suspended: close the socket here (another holder closes at its next poll); the link survives. */
  async stop(connection: EngineConnection): Promise<void> {
    const session = this.sessions.get(connection.id);
    if (!session) return;
    this.sessions.delete(connection.id);
    await session.end();
    await this.leases.release(connection.id);
  }

  /** Resumed: reopen the socket when the session is linked and nobody holds it. */
  async start(connection: EngineConnection): Promise<void> {
    if (this.sessions.has(connection.id)) return;
    const linked = await this.options.db.getRepository(Connection).findOneBy({ id: connection.id });
    if (linked?.linked && (await this.leases.acquire(connection.id))) await this.take(connection.id);
  }

  /**
   * Reports of one connection: spooled to disk first, then applied in order, retried for as long as
   * the database is away (spool.ts); resolves once applied.
   */
  private report(connectionId: string, events: Report[]): Promise<void> {
    this.spool.add(connectionId, events);
    return this.spool.settled(connectionId);
  }

  private async apply(connectionId: string, body: ProviderCallbackBody): Promise<void> {
    const connection = await this.options.db.getRepository(Connection).findOneBy({ id: connectionId });
    // Deleted: its reports have nowhere to go.
    if (!connection || connection.deletedAt) return;
    await this.options.callbacks.handle(BAILEYS_ENGINE, callbackToken(this.options.secretKey, connection.id, connection.callbackNonce), body);
  }
}
