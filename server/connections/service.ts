// Connections: one messaging number each, addressed by slug within its workspace. Creation checks
// the plan's allowance under a lock on the workspace row, so two parallel creates cannot both take
// the last place. Engines are never called inside a transaction: an engine may use the database
// itself, and on the embedded PostgreSQL a second connection waiting on an open transaction hangs.
import { IsNull, type DataSource, type EntityManager } from "typeorm";
import type { ConnectionSettings, ConnectionSettingsBody, Connection as ConnectionView, CreateConnectionBody, EngineName, PairBody, PairingMethod } from "../../contract/index.js";
import { CONNECTION_PURGE_JOB } from "../../jobs/names.js";
import { enqueueJob } from "../db/job-outbox.js";
import type { Config } from "../config.js";
import { rows } from "../db/rows.js";
import { isUniqueViolation } from "../db/unique-violation.js";
import { maskProxyUrl } from "../engines/baileys/proxy.js";
import { EngineError, type Engine, type EngineConnection, type EngineRegistry } from "../engines/engine.js";
import { recordEvent } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import { decrypt, encrypt } from "../secrets.js";
import { callbackToken, callbackTokenDigest, callbackUrl, newCallbackNonce } from "./callback-token.js";
import { Connection, PairingGrant } from "./entities.js";
import { ACCOUNT_RESTRICTED, allowedFrom, eventForChange, nextState, restrictionHolds, type ConnectionAction } from "./states.js";

/** Pairing grants live 60 seconds (docs/engines.md). */
export const PAIRING_GRANT_TTL_MS = 60_000;
/** Engine calls made on the user's behalf but not essential to the answer wait at most this long. */
const BEST_EFFORT_TIMEOUT_MS = 5_000;

/** The connection as an engine knows it: its id and where to report, with its callback token. */
export function engineConnectionFor(
  config: Pick<Config, "baseUrl" | "secretKey">,
  connection: Pick<Connection, "id" | "transport" | "callbackNonce">,
): EngineConnection {
  const token = callbackToken(config.secretKey, connection.id, connection.callbackNonce);
  return { id: connection.id, callbackUrl: callbackUrl(config.baseUrl, connection.transport, token) };
}

export function connectionView(c: Connection): ConnectionView {
  // Deleted connections are hidden from every read and their deletion has no event.
  if (c.state === "deleted") throw new Error(`connection ${c.id} is deleted and has no view`);
  return {
    id: c.id,
    object: "connection",
    slug: c.slug,
    name: c.name,
    state: c.state,
    phone: c.phone,
    // A restriction leaves the connection connected: its detail says why nothing is sent.
    detail: c.detail ?? (restrictionHolds(c) ? ACCOUNT_RESTRICTED : null),
    transport: c.transport,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

/**
 * Applies `action` to a locked connection row inside `em`'s transaction: the new state, the
 * engine-reported fields in `patch`, and the webhook event when the state changed to one that has
 * an event. Returns the updated connection, or null when the move is not allowed.
 */
export async function moveConnection(
  em: EntityManager,
  connection: Connection,
  action: ConnectionAction,
  patch: Partial<Pick<Connection, "linked" | "phone" | "detail">> = {},
): Promise<Connection | null> {
  const linked = patch.linked ?? connection.linked;
  const to = nextState(action, connection.state, linked);
  if (to === null) return null;
  const now = new Date();
  // The engine's reason belongs to the move that reported it: any other move clears it.
  const detail = patch.detail ?? null;
  const updated: Connection = { ...connection, ...patch, detail, state: to, updatedAt: now, deletedAt: to === "deleted" ? now : connection.deletedAt };
  await em.update(Connection, { id: connection.id }, { state: to, linked, phone: updated.phone, detail, updatedAt: now, deletedAt: updated.deletedAt });
  const type = eventForChange(connection.state, to);
  if (type) {
    await recordEvent(em, { workspaceId: connection.workspaceId, type, connection: { id: connection.id, slug: connection.slug }, data: connectionView(updated) });
  }
  return updated;
}

export type RedeemedGrant = { grantId: string; expiresAt: Date } & ({ method: "qr"; payload: string; qrSvg: string } | { method: "code"; code: string });

export class ConnectionService {
  constructor(
    private readonly db: DataSource,
    private readonly config: Config,
    private readonly engines: EngineRegistry,
    private readonly logger: Logger,
  ) {}

  /** Creates a connection; the callback token is returned here and never again. */
  async create(principal: Principal, body: CreateConnectionBody): Promise<{ connection: Connection; callbackToken: string }> {
    const id = newId("con");
    const nonce = newCallbackNonce();
    const token = callbackToken(this.config.secretKey, id, nonce);
    const now = new Date();
    try {
      const connection = await this.db.transaction(async (em) => {
        await this.requireRoom(em, principal.workspaceId);
        const row = em.create(Connection, {
          id,
          workspaceId: principal.workspaceId,
          slug: body.slug,
          name: body.name ?? null,
          state: "created",
          linked: false,
          phone: null,
          detail: null,
          restricted: false,
          restrictedUntil: null,
          transport: this.config.transport,
          callbackNonce: nonce,
          callbackTokenDigest: callbackTokenDigest(token),
          createdAt: now,
          updatedAt: now,
          deletedAt: null,
        });
        await em.insert(Connection, row);
        return row;
      });
      return { connection, callbackToken: token };
    } catch (err) {
      // The partial unique index on live slugs settles races that a prior SELECT could not.
      if (isUniqueViolation(err, "connections_live_slug")) throw new ApiError("slug_taken", `A connection with the slug ${body.slug} already exists in this workspace.`);
      throw err;
    }
  }

  async list(principal: Principal): Promise<Connection[]> {
    return this.db
      .getRepository(Connection)
      .createQueryBuilder("c")
      .where("c.workspaceId = :ws AND c.deletedAt IS NULL", { ws: principal.workspaceId })
      .orderBy("c.createdAt", "DESC")
      .addOrderBy("c.id", "DESC")
      .getMany();
  }

  /** A live connection of the caller's workspace; 404 for unknown, deleted or another workspace's. */
  async get(principal: Principal, slug: string, em: EntityManager = this.db.manager, lock = false): Promise<Connection> {
    const connection = await em.findOne(Connection, {
      where: { workspaceId: principal.workspaceId, slug, deletedAt: IsNull() },
      ...(lock ? { lock: { mode: "pessimistic_write" as const } } : {}),
    });
    if (!connection) throw ApiError.notFound("connection");
    return connection;
  }

  /**
   * Soft delete: hidden at once, and the data purge (jobs/purge-connection.ts) queued with it; the
   * purge waits until the engine's logout has had its time.
   */
  async delete(principal: Principal, slug: string): Promise<void> {
    const deleted = await this.db.transaction(async (em) => {
      const gone = await this.transition(em, await this.get(principal, slug, em, true), "delete");
      await enqueueJob(em, CONNECTION_PURGE_JOB, { connection_id: gone.id }, new Date(Date.now() + BEST_EFFORT_TIMEOUT_MS));
      return gone;
    });
    const engine = this.engines.get(deleted.transport);
    if (engine) await this.bestEffort("logout", deleted, (c) => engine.logout(c));
  }

  /**
   * Opens a pairing grant (replacing an open one) for a QR code or, with `method: "code"`, a code
   * the phone of `phone` types; the payload is stored encrypted for 60 s.
   */
  async pair(principal: Principal, slug: string, body: PairBody = { method: "qr" }): Promise<PairingGrant> {
    const current = await this.get(principal, slug);
    this.requireAllowed(current, "pair");
    const engine = this.engineOf(current);
    const request = body.method === "code" ? { method: "code" as const, phone: body.phone! } : { method: "qr" as const };
    let payload: string;
    try {
      ({ payload } = await engine.startPairing(engineConnectionFor(this.config, current), request));
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      throw new ApiError("transport_unavailable", `The ${current.transport} engine could not start pairing: ${err.message}`);
    }
    return this.db.transaction(async (em) => {
      // The state may have moved while the engine worked: check again under the lock.
      const connection = await this.get(principal, slug, em, true);
      await this.transition(em, connection, "pair");
      await em.delete(PairingGrant, { connectionId: connection.id });
      const grant = em.create(PairingGrant, {
        id: newId("grt"),
        connectionId: connection.id,
        method: request.method,
        payloadSealed: encrypt(this.config.secretKey, payload),
        expiresAt: new Date(Date.now() + PAIRING_GRANT_TTL_MS),
        createdAt: new Date(),
      });
      await em.insert(PairingGrant, grant);
      return grant;
    });
  }

  /** Single use: the grant is deleted as it is read, so a second redeem finds nothing (404). */
  async redeem(principal: Principal, slug: string, grantId: string): Promise<RedeemedGrant> {
    const connection = await this.get(principal, slug);
    const [row] = await rows<{ payload_sealed: string; method: PairingMethod; expires_at: Date }>(
      this.db,
      `DELETE FROM pairing_grants WHERE id = $1 AND connection_id = $2 AND expires_at > now() RETURNING payload_sealed, method, expires_at`,
      [grantId, connection.id],
    );
    if (!row) throw ApiError.notFound("pairing grant (unknown, already redeemed or expired)");
    // A rotating payload (a real socket's QR) is read now: the grant stays single-use, the code fresh.
    const latest = await this.engines.get(connection.transport)?.currentPairing?.(engineConnectionFor(this.config, connection));
    const payload = latest ?? decrypt(this.config.secretKey, row.payload_sealed);
    const expiresAt = new Date(row.expires_at);
    if (row.method === "code") return { grantId, method: "code", code: payload, expiresAt };
    // Loaded on the first QR code, not at start: most processes never draw one.
    const { default: QRCode } = await import("qrcode");
    const svg = await QRCode.toString(payload, { type: "svg", errorCorrectionLevel: "M", margin: 2 });
    return { grantId, method: "qr", payload, qrSvg: `data:image/svg+xml;base64,${Buffer.from(svg, "utf8").toString("base64")}`, expiresAt };
  }

  /** The connection's proxy: sealed when set, null to fall back to the gateway's default; answered masked. */
  async updateSettings(principal: Principal, slug: string, body: ConnectionSettingsBody): Promise<ConnectionSettings> {
    const connection = await this.get(principal, slug);
    const sealed = body.proxy_url === null ? null : encrypt(this.config.secretKey, body.proxy_url);
    await this.db.getRepository(Connection).update({ id: connection.id }, { proxyUrlSealed: sealed, updatedAt: new Date() });
    return { proxy_url: body.proxy_url === null ? null : maskProxyUrl(body.proxy_url) };
  }

  /**
   * Moves a connection to another engine of this gateway (one created on an engine that is not
   * configured here can then pair). Only while no device is linked; the old engine's session, if
   * that engine runs here, is forgotten, and an open pairing grant goes with it.
   */
  async move(principal: Principal, slug: string, transport: EngineName): Promise<Connection> {
    if (!this.engines.get(transport)) {
      const names = this.engines.names();
      throw new ApiError("validation_failed", `No engine named ${transport} is configured on this gateway; configured: ${names.join(", ")}.`, {
        errors: [{ path: "transport", message: `must be one of the engines configured on this gateway: ${names.join(", ")}` }],
      });
    }
    const moved = await this.db.transaction(async (em) => {
      const connection = await this.get(principal, slug, em, true);
      if (connection.transport === transport) return null;
      const updated = await this.transition(em, connection, "move");
      await em.update(Connection, { id: connection.id }, { transport });
      await em.delete(PairingGrant, { connectionId: connection.id });
      return { before: connection, after: { ...updated, transport } };
    });
    if (!moved) return this.get(principal, slug);
    const previous = this.engines.get(moved.before.transport);
    if (previous) await this.bestEffort("logout", moved.before, (c) => previous.logout(c));
    this.logger.info({ connection_id: moved.after.id, from: moved.before.transport, to: transport }, "connection moved to another engine");
    return moved.after;
  }

  async suspend(principal: Principal, slug: string): Promise<Connection> {
    const suspended = await this.db.transaction(async (em) => {
      const connection = await this.transition(em, await this.get(principal, slug, em, true), "suspend");
      // A suspended connection must not be linkable through a grant opened before.
      await em.delete(PairingGrant, { connectionId: connection.id });
      return connection;
    });
    const engine = this.engines.get(suspended.transport);
    if (engine) await this.bestEffort("stop", suspended, (c) => engine.stop(c));
    return suspended;
  }

  /**
   * Resumes a suspended connection, or the sending of a connected one the network restricted (the
   * operator's call: the network may refuse again, and then reports the restriction again).
   */
  async resume(principal: Principal, slug: string): Promise<Connection> {
    const { resumed, sendingOnly } = await this.db.transaction(async (em) => {
      const connection = await this.get(principal, slug, em, true);
      if (connection.restricted) await em.update(Connection, { id: connection.id }, { restricted: false, restrictedUntil: null, updatedAt: new Date() });
      const lifted = { ...connection, restricted: false, restrictedUntil: null };
      if (connection.state === "connected" && restrictionHolds(connection)) return { resumed: lifted, sendingOnly: true };
      return { resumed: await this.transition(em, lifted, "resume"), sendingOnly: false };
    });
    const engine = this.engines.get(resumed.transport);
    if (engine && !sendingOnly) await this.bestEffort("start", resumed, (c) => engine.start(c));
    return resumed;
  }

  private async transition(em: EntityManager, connection: Connection, action: ConnectionAction): Promise<Connection> {
    this.requireAllowed(connection, action);
    return (await moveConnection(em, connection, action))!;
  }

  private requireAllowed(connection: Connection, action: ConnectionAction): void {
    if (nextState(action, connection.state, connection.linked) !== null) return;
    throw ApiError.invalidState(`Cannot ${action} a connection that is ${connection.state}; ${action} is allowed from ${allowedFrom(action).join(", ")}.`);
  }

  private engineOf(connection: Connection): Engine {
    const engine = this.engines.get(connection.transport);
    if (!engine) throw new ApiError("transport_unavailable", `No engine named ${connection.transport} is configured on this gateway.`);
    return engine;
  }

  /** The workspace row is locked until commit, so parallel creates count one after another. */
  private async requireRoom(em: EntityManager, workspaceId: string): Promise<void> {
    const [plan] = (await em.query(
      `SELECT p.id, p.name, p.max_connections FROM workspaces w JOIN plans p ON p.id = w.plan_id WHERE w.id = $1 FOR UPDATE OF w`,
      [workspaceId],
    )) as { id: string; name: string; max_connections: number | null }[];
    if (!plan || plan.max_connections === null) return;
    const [{ n }] = (await em.query(`SELECT count(*)::int AS n FROM connections WHERE workspace_id = $1 AND deleted_at IS NULL`, [workspaceId])) as [
      { n: number },
    ];
    if (n < plan.max_connections) return;
    const [roomier] = (await em.query(
      `SELECT id, name, max_connections FROM plans WHERE max_connections IS NULL OR max_connections > $1 ORDER BY rank ASC LIMIT 1`,
      [n],
    )) as { id: string; name: string; max_connections: number | null }[];
    const offer = roomier ? `the ${roomier.name} plan allows ${roomier.max_connections ?? "unlimited"}` : "no plan allows more";
    throw new ApiError(
      "plan_required",
      `Your plan (${plan.name}) allows ${plan.max_connections} connection${plan.max_connections === 1 ? "" : "s"} and all are in use; ${offer}. Deleted connections do not count.`,
      { feature: "connections", required_plan: roomier?.id ?? null, limit: plan.max_connections },
    );
  }

  /** Engine housekeeping the user's answer does not depend on: failures and slowness are logged. */
  private async bestEffort(what: string, connection: Connection, call: (c: EngineConnection) => Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        call(engineConnectionFor(this.config, connection)),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${BEST_EFFORT_TIMEOUT_MS} ms`)), BEST_EFFORT_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      this.logger.warn({ err, connection_id: connection.id, engine: connection.transport }, `engine ${what} failed`);
    } finally {
      clearTimeout(timer);
    }
  }
}
