// The Baileys engine: connections on the real network through the library's linked-device socket.
// Each connection's socket lives in exactly one gateway process, the holder of its lease
// (lease.ts); this process renews its leases, gives up the sessions whose connection no longer
// wants one, and takes up linked connections nobody holds. Reports go through the same provider
// callback code as the HTTP route (ProviderCallbackService), in process: the engine already shares
// the gateway's database, and a loopback HTTP hop would only add a way to fail (BASE_URL is often
// not reachable from inside the host) without adding a check the service does not already make.
import type { DataSource } from "typeorm";
import { ProviderCallbackBody } from "../../../contract/index.js";
import { backoffMs } from "../../backoff.js";
import { callbackToken } from "../../connections/callback-token.js";
import { Connection } from "../../connections/entities.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { ProviderCallbackService } from "../../provider/service.js";
import { decrypt, randomToken } from "../../secrets.js";
import type { UrlCheckOptions } from "../../outbound/address-policy.js";
import { EngineError, type Engine, type EngineConnection, type NumberCheck, type OutboundMessage } from "../engine.js";
import { wipeSession } from "./auth-state.js";
import { Leases } from "./lease.js";
import { Relay } from "./relay.js";
import { Session, type Report, type SessionHost } from "./session.js";
import { loadSocketFactory, type SocketFactory } from "./socket.js";
import { SessionStore } from "./store.js";

export const BAILEYS_ENGINE = "baileys";
/** How long pairing waits for the socket's first QR before answering 503. */
const FIRST_QR_TIMEOUT_MS = 20_000;
/** Sessions taken up per poll, so that a restart does not open hundreds of sockets at once. */
const TAKE_UP_PER_POLL = 20;
const REPORT_ATTEMPTS = 6;
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
}

export class BaileysEngine implements Engine {
  readonly name = BAILEYS_ENGINE;
  readonly leases: Leases;
  private readonly sessions = new Map<string, Session>();
  private readonly host: SessionHost;
  private readonly relay: Relay;
  private readonly reportChains = new Map<string, Promise<void>>();
  private factory: SocketFactory | null = null;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** When the leases were last renewed: past it plus the lease period minus a margin, sockets close. */
  private renewedAt = 0;
  private prunedAt = 0;
  private polling: Promise<void> = Promise.resolve();

  constructor(private readonly options: BaileysOptions) {
    this.leases = new Leases(options.db, options.leaseSeconds);
    this.relay = new Relay(options.db, options.secretKey, options.relaySpacingMs, (id, events) => this.report(id, events), options.logger);
    this.host = {
      db: options.db,
      secretKey: options.secretKey,
      logger: options.logger,
      store: new SessionStore(options.db, options.secretKey),
      leases: this.leases,
      factory: (socketOptions) => this.socketFactory()(socketOptions),
      mediaPolicy: options.mediaPolicy,
      report: (id, events) => this.report(id, events),
      forget: (session) => this.forget(session),
      count: (metric, label) => {
        if (metric === "reconnect") options.metrics.engineReconnects.inc({ engine: BAILEYS_ENGINE });
        else if (metric === "send") options.metrics.engineSends.inc({ engine: BAILEYS_ENGINE, outcome: label ?? "written" });
        else options.metrics.engineReceipts.inc({ engine: BAILEYS_ENGINE, status: label ?? "unknown" });
      },
    };
  }

  private socketFactory(): SocketFactory {
    if (!this.factory) throw new Error("the baileys engine is not open");
    return this.factory;
  }

  async open(): Promise<void> {
    this.factory = await loadSocketFactory(this.options.socketModule);
    this.running = true;
    this.renewedAt = Date.now();
    this.polling = this.poll();
    await this.polling;
  }

  /** Closes every socket of this process and hands its leases back, so another takes them at once. */
  async close(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    // A poll under way may be opening sockets: let it finish, then close what it opened too.
    await this.polling;
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map(async (s) => {
      await s.end();
      await this.leases.release(s.connectionId).catch(() => undefined);
    }));
    await Promise.all(this.reportChains.values());
  }

  private schedulePoll(): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll();
    }, (this.options.leaseSeconds * 1000) / 4);
  }

  /** Every quarter lease period: renew, give up what is no longer ours, take up what nobody holds. */
  private async poll(): Promise<void> {
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
        for (const id of await this.leases.orphans(BAILEYS_ENGINE, TAKE_UP_PER_POLL)) {
          if (!this.sessions.has(id) && (await this.leases.acquire(id))) await this.take(id);
        }
        this.relay.drain(this.sessions);
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
    this.schedulePoll();
  }

  private async take(connectionId: string): Promise<Session> {
    const session = new Session(this.host, connectionId);
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

  /** A fresh socket with fresh credentials; its first QR is the payload. Later QRs replace it. */
  async startPairing(connection: EngineConnection): Promise<{ payload: string }> {
    const existing = this.sessions.get(connection.id);
    if (existing && !existing.isOpen) {
      const qr = await existing.nextQr(FIRST_QR_TIMEOUT_MS);
      if (qr) return { payload: qr };
    }
    if (!(await this.leases.acquire(connection.id))) {
      throw new EngineError("another gateway process holds this connection's session; try again shortly", false, "connection_elsewhere");
    }
    if (existing) {
      this.sessions.delete(connection.id);
      await existing.end();
    }
    await wipeSession(this.options.db, connection.id);
    const session = await this.take(connection.id);
    const qr = await session.nextQr(FIRST_QR_TIMEOUT_MS);
    if (!qr) {
      this.sessions.delete(connection.id);
      await session.end();
      await this.leases.release(connection.id);
      throw new EngineError("the network did not offer a pairing code", false, "transport_unavailable");
    }
    return { payload: qr };
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

  async checkNumber(connection: EngineConnection, phone: string): Promise<NumberCheck> {
    const session = this.sessions.get(connection.id);
    return session ? session.checkNumber(phone) : { checked: false, onNetwork: null };
  }

  /** Deleted: unlink the device if this process holds it (else its holder does so at its next poll). */
  async logout(connection: EngineConnection): Promise<void> {
    const session = this.sessions.get(connection.id);
    this.sessions.delete(connection.id);
    if (session) await session.logout();
    await wipeSession(this.options.db, connection.id);
    if (session) await this.leases.release(connection.id);
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

  /** Reports of one connection apply in order; a failed one is retried with backoff, then logged. */
  private report(connectionId: string, events: Report[]): void {
    const previous = this.reportChains.get(connectionId) ?? Promise.resolve();
    const next = previous.then(() => this.deliver(connectionId, events));
    this.reportChains.set(connectionId, next);
    void next.finally(() => {
      if (this.reportChains.get(connectionId) === next) this.reportChains.delete(connectionId);
    });
  }

  private async deliver(connectionId: string, events: Report[]): Promise<void> {
    // The wire format's own checks, as on the HTTP route: a report that fails them is a bug to log, not to apply.
    const parsed = ProviderCallbackBody.safeParse({ events: events.map((e) => ({ ...e, event_id: e.event_id ?? `bly_${randomToken(12)}` })) });
    if (!parsed.success) {
      this.options.logger.error({ connection_id: connectionId, types: events.map((e) => e.type), issues: parsed.error.issues }, "baileys report does not validate; dropped");
      return;
    }
    const body = parsed.data;
    for (let attempt = 1; ; attempt++) {
      try {
        const connection = await this.options.db.getRepository(Connection).findOneBy({ id: connectionId });
        if (!connection || connection.deletedAt) return;
        await this.options.callbacks.handle(BAILEYS_ENGINE, callbackToken(this.options.secretKey, connection.id, connection.callbackNonce), body);
        return;
      } catch (err) {
        if (attempt >= REPORT_ATTEMPTS) {
          this.options.logger.error({ err, connection_id: connectionId, types: events.map((e) => e.type) }, "baileys report dropped after retries");
          return;
        }
        await new Promise((r) => setTimeout(r, backoffMs(attempt + 1, 250, 8_000, { jitter: 0 })));
      }
    }
  }
}
