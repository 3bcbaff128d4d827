// Groups of a connection's number (product.md, "Groups"): each call resolves the connection from
// the caller's workspace, refuses unless it is connected, and asks its engine. The engine's
// refusals become the API's: `group_not_found` 404, `not_group_admin` 403.
import type { CreateGroupBody, Group, GroupCreated, GroupInvite, GroupList, GroupSummary, ListGroupsQuery, ParticipantOutcome, ParticipantsBody, UpdateGroupBody } from "../../contract/index.js";
import type { Config } from "../config.js";
import { engineConnectionFor, type ConnectionService } from "../connections/service.js";
import { EngineError, type EngineConnection, type EngineGroup, type EngineGroups, type EngineRegistry } from "../engines/engine.js";
import { cursorKey, decodeCursor, encodeCursor, filterFingerprint, isoToMicros, microsToIso } from "../http/cursor.js";
import { ApiError } from "../http/errors.js";
import type { Principal } from "../http/principal.js";

/** Where an invite code is joined. */
const INVITE_BASE = "https://chat.whatsapp.com/";

export function groupSummary(g: EngineGroup, ownPhone: string | null): GroupSummary {
  return {
    id: g.id,
    object: "group",
    subject: g.subject,
    size: g.participants.length,
    own_role: g.participants.find((p) => ownPhone !== null && p.phone === ownPhone)?.role ?? null,
    created_at: g.createdAt.toISOString(),
  };
}

export function groupView(g: EngineGroup, ownPhone: string | null): Group {
  return {
    ...groupSummary(g, ownPhone),
    description: g.description,
    announce: g.announce,
    locked: g.locked,
    participants: g.participants.map((p) => ({ phone: p.phone, lid: p.lid, role: p.role })),
  };
}

interface Target {
  groups: EngineGroups;
  connection: EngineConnection;
  phone: string | null;
}

export class GroupService {
  constructor(
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
    return { groups, connection: engineConnectionFor(this.config, connection), phone: connection.phone };
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

  /** Newest first, then by id; the page after the cursor's position. */
  async list(principal: Principal, slug: string, query: ListGroupsQuery): Promise<GroupList> {
    const t = await this.target(principal, slug);
    const key = cursorKey(this.config.secretKey);
    const fingerprint = filterFingerprint(principal.workspaceId, { connection: slug, list: "groups" });
    const after = query.cursor ? decodeCursor(key, query.cursor, fingerprint) : undefined;
    const position = (g: GroupSummary) => ({ created_at: microsToIso(isoToMicros(g.created_at)!), id: g.id });
    const all = (await this.call(() => t.groups.list(t.connection)))
      .map((g) => groupSummary(g, t.phone))
      .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1));
    const start = after ? all.findIndex((g) => { const p = position(g); return p.created_at < after.created_at || (p.created_at === after.created_at && p.id < after.id); }) : 0;
    const rest = start < 0 ? [] : all.slice(start);
    const data = rest.slice(0, query.limit);
    const last = data[data.length - 1];
    return { data, next_cursor: rest.length > query.limit && last ? encodeCursor(key, position(last), fingerprint) : null };
  }

  async get(principal: Principal, slug: string, groupId: string): Promise<Group> {
    const t = await this.target(principal, slug);
    return groupView(await this.call(() => t.groups.get(t.connection, groupId)), t.phone);
  }

  async create(principal: Principal, slug: string, body: CreateGroupBody): Promise<GroupCreated> {
    const t = await this.target(principal, slug);
    const { group, outcomes } = await this.call(() => t.groups.create(t.connection, body.subject, body.participants));
    return { ...groupView(group, t.phone), outcomes: body.participants.map((phone, i) => ({ phone, outcome: outcomes[i]! })) };
  }

  async update(principal: Principal, slug: string, groupId: string, body: UpdateGroupBody): Promise<Group> {
    const t = await this.target(principal, slug);
    await this.call(() => t.groups.update(t.connection, groupId, body));
    return groupView(await this.call(() => t.groups.get(t.connection, groupId)), t.phone);
  }

  async participants(principal: Principal, slug: string, groupId: string, body: ParticipantsBody): Promise<ParticipantOutcome[]> {
    const t = await this.target(principal, slug);
    const outcomes = await this.call(() => t.groups.participants(t.connection, groupId, body.action, body.participants));
    return body.participants.map((phone, i) => ({ phone, outcome: outcomes[i]! }));
  }

  async leave(principal: Principal, slug: string, groupId: string): Promise<void> {
    const t = await this.target(principal, slug);
    await this.call(() => t.groups.leave(t.connection, groupId));
  }

  async invite(principal: Principal, slug: string, groupId: string, renew: boolean): Promise<GroupInvite> {
    const t = await this.target(principal, slug);
    const code = await this.call(() => (renew ? t.groups.revokeInvite(t.connection, groupId) : t.groups.inviteCode(t.connection, groupId)));
    return { group: groupId, code, link: INVITE_BASE + code };
  }
}
