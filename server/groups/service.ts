// Groups of a connection's number (docs/groups.md): each call resolves the connection from
// the caller's workspace, refuses unless it is connected, and asks its engine. The engine's
// refusals become the API's: `group_not_found` 404, `not_group_admin` 403.
import type { CreateGroupBody, Group, GroupCreated, GroupInvite, GroupList, ListGroupsQuery, ParticipantOutcome, ParticipantsBody, UpdateGroupBody } from "../../contract/index.js";
import type { DataSource } from "typeorm";
import type { Config } from "../config.js";
import type { Connection } from "../connections/entities.js";
import { engineConnectionFor, type ConnectionService } from "../connections/service.js";
import { EngineError, type EngineConnection, type EngineGroup, type EngineGroups, type EngineRegistry } from "../engines/engine.js";
import { cursorKey, decodeCursor, encodeCursor, filterFingerprint, microsToIso } from "../http/cursor.js";
import { ApiError } from "../http/errors.js";
import { applyGroup, cachedGroup, cachedGroups, groupsListed, storeGroupList } from "./cache.js";
import { groupSummary, groupView } from "./view.js";
import type { Principal } from "../http/principal.js";

/** Where an invite code is joined. */
const INVITE_BASE = "https://chat.whatsapp.com/";

interface Target {
  row: Connection;
  groups: EngineGroups;
  connection: EngineConnection;
  phone: string | null;
}

export class GroupService {
  constructor(
    private readonly db: DataSource,
    private readonly config: Config,
    private readonly engines: EngineRegistry,
    private readonly connections: ConnectionService,
  ) {}

  /** The connected connection's engine groups; 409 unless connected, 503 when its engine has none. */
  private async target(principal: Principal, slug: string): Promise<Target> {
    const connection = await this.connections.get(principal, slug);
    if (connection.state !== "connected") throw new ApiError("connection_not_ready", `The connection ${slug} is ${connection.state}; groups need it connected.`);
    const groups = this.engines.get(connection.transport)?.groups;
    if (!groups) throw new ApiError("transport_unavailable", `The ${connection.transport} engine does not serve groups on this gateway.`);
    return { row: connection, groups, connection: engineConnectionFor(this.config, connection), phone: connection.phone };
  }

  /** Runs an engine call, turning its refusals into the API's. */
  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      if (err.code === "group_not_found") throw ApiError.notFound("group (the number is not in it)");
      if (err.code === "not_group_admin") throw new ApiError("not_group_admin", "The network requires the linked number to be an admin of this group.");
      if (err.code === "session_not_linked") throw new ApiError("connection_not_ready", "The connection's session is not linked.");
      throw new ApiError("unavailable", `The engine could not answer: ${err.message}`, { retryAfter: 5 });
    }
  }

  /**
   * Newest first, then by id, from the cache; the network is asked once per connection (the first
   * list), after which its group events keep the cache fresh.
   */
  async list(principal: Principal, slug: string, query: ListGroupsQuery): Promise<GroupList> {
    const t = await this.target(principal, slug);
    const key = cursorKey(this.config.secretKey);
    const fingerprint = filterFingerprint(principal.workspaceId, { connection: slug, list: "groups" });
    const after = query.cursor ? decodeCursor(key, query.cursor, fingerprint) : undefined;
    if (!(await groupsListed(this.db.manager, t.row.id))) {
      const groups = await this.call(() => t.groups.list(t.connection));
      await this.db.transaction((em) => storeGroupList(em, t.row.id, groups));
    }
    const found = await cachedGroups(this.db.manager, t.row.id, query.limit + 1, after);
    const data = found.slice(0, query.limit).map((g) => groupSummary(g, t.phone));
    const last = found.length > query.limit ? found[query.limit - 1] : undefined;
    return { data, next_cursor: last ? encodeCursor(key, { created_at: microsToIso(BigInt(last.createdAt.getTime()) * 1000n), id: last.id }, fingerprint) : null };
  }

  /** The cached group, or the network's answer (stored, so the next read needs no query). */
  private async fresh(t: Target, groupId: string): Promise<EngineGroup> {
    const cached = await cachedGroup(this.db.manager, t.row.id, groupId);
    if (cached) return cached;
    return this.refresh(t, groupId);
  }

  /** Asks the network and stores its answer; a group the number is not in leaves the cache. */
  private async refresh(t: Target, groupId: string): Promise<EngineGroup> {
    try {
      const group = await this.call(() => t.groups.get(t.connection, groupId));
      await this.db.transaction((em) => applyGroup(em, t.row, groupId, group));
      return group;
    } catch (err) {
      if (err instanceof ApiError && err.code === "not_found") await this.db.transaction((em) => applyGroup(em, t.row, groupId, null));
      throw err;
    }
  }

  async get(principal: Principal, slug: string, groupId: string): Promise<Group> {
    const t = await this.target(principal, slug);
    return groupView(await this.fresh(t, groupId), t.phone);
  }

  async create(principal: Principal, slug: string, body: CreateGroupBody): Promise<GroupCreated> {
    const t = await this.target(principal, slug);
    const { group, outcomes } = await this.call(() => t.groups.create(t.connection, body.subject, body.participants));
    await this.db.transaction((em) => applyGroup(em, t.row, group.id, group));
    return { ...groupView(group, t.phone), outcomes: body.participants.map((phone, i) => ({ phone, outcome: outcomes[i]! })) };
  }

  async update(principal: Principal, slug: string, groupId: string, body: UpdateGroupBody): Promise<Group> {
    const t = await this.target(principal, slug);
    await this.call(() => t.groups.update(t.connection, groupId, body));
    return groupView(await this.refresh(t, groupId), t.phone);
  }

  async participants(principal: Principal, slug: string, groupId: string, body: ParticipantsBody): Promise<ParticipantOutcome[]> {
    const t = await this.target(principal, slug);
    const outcomes = await this.call(() => t.groups.participants(t.connection, groupId, body.action, body.participants));
    await this.refresh(t, groupId);
    return body.participants.map((phone, i) => ({ phone, outcome: outcomes[i]! }));
  }

  async leave(principal: Principal, slug: string, groupId: string): Promise<void> {
    const t = await this.target(principal, slug);
    await this.call(() => t.groups.leave(t.connection, groupId));
    await this.db.transaction((em) => applyGroup(em, t.row, groupId, null));
  }

  async invite(principal: Principal, slug: string, groupId: string, renew: boolean): Promise<GroupInvite> {
    const t = await this.target(principal, slug);
    const code = await this.call(() => (renew ? t.groups.revokeInvite(t.connection, groupId) : t.groups.inviteCode(t.connection, groupId)));
    return { group: groupId, code, link: INVITE_BASE + code };
  }
}
