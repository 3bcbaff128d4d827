// Groups on the real network: the engine's group calls on the library's (groupFetchAllParticipating,
// groupMetadata, groupCreate, groupParticipantsUpdate, …), the network's refusals as the engine's
// errors, and the library's group metadata translated to the engine's and back (the session hands
// the library our cached metadata for its group sends).
import type { GroupMetadata, GroupParticipant } from "@whiskeysockets/baileys";
import { EngineError, type EngineConnection, type EngineGroup, type EngineGroupParticipant, type EngineGroups, type EngineParticipantOutcome } from "../engine.js";
import type { EngineSocket } from "./socket.js";
import { lidOfJid, phoneJid, phoneOfJid, recipientJid } from "./translate.js";

/** A participant as the library gives it: its JID is a phone number's or a LID; v7 gives the other form too. */
export function participantOf(p: GroupParticipant): EngineGroupParticipant {
  const alt = p as GroupParticipant & { phoneNumber?: string; lid?: string };
  return {
    phone: phoneOfJid(p.id) ?? phoneOfJid(alt.phoneNumber),
    lid: lidOfJid(p.id) ?? lidOfJid(alt.lid),
    role: p.admin === "superadmin" ? "superadmin" : p.admin === "admin" ? "admin" : "member",
  };
}

/** The library's group metadata as the engine reports it. */
export function groupOf(m: GroupMetadata): EngineGroup {
  return {
    id: m.id,
    subject: m.subject ?? "",
    description: m.desc ?? null,
    announce: Boolean(m.announce),
    locked: Boolean(m.restrict),
    createdAt: new Date((m.creation ?? 0) * 1000),
    participants: (m.participants ?? []).map(participantOf),
  };
}

/** Our cached group in the library's shape (what its send path needs: the participants). */
export function libraryMetadata(g: EngineGroup): GroupMetadata {
  return {
    id: g.id,
    subject: g.subject,
    desc: g.description ?? undefined,
    announce: g.announce,
    restrict: g.locked,
    creation: Math.floor(g.createdAt.getTime() / 1000),
    owner: undefined,
    participants: g.participants.map((p) => ({
      id: p.lid ?? `${(p.phone ?? "").replace(/\D/g, "")}@s.whatsapp.net`,
      admin: p.role === "member" ? null : p.role,
    })),
  } as GroupMetadata;
}

/** What the network answered a group query with: the code of its `<error>` node (the library's Boom carries it as `data`). */
function networkCode(err: unknown): number | null {
  const e = err as { data?: unknown; output?: { statusCode?: unknown } } | null;
  if (typeof e?.data === "number") return e.data;
  return typeof e?.output?.statusCode === "number" ? e.output.statusCode : null;
}

/**
 * A refused group query as the engine's error: 401 `not-authorized` is the network requiring an
 * admin; 403 `forbidden` and 404 `item-not-found` mean the number is not in the group (left,
 * removed, or no such group); anything else is a transient failure (a timeout, a closed socket).
 */
export function groupError(err: unknown, groupId: string): EngineError {
  if (err instanceof EngineError) return err;
  const code = networkCode(err);
  if (code === 401) return new EngineError(`not an admin of group ${groupId}`, true, "not_group_admin");
  if (code === 403 || code === 404) return new EngineError(`not a member of group ${groupId}`, true, "group_not_found");
  if (code !== null && code >= 400 && code < 500) return new EngineError(`the network refused the group request (${code})`, true);
  return new EngineError(`the network did not answer the group request: ${err instanceof Error ? err.message : String(err)}`, false);
}

/**
 * A participant's outcome from its status in the network's answer to `groupParticipantsUpdate`:
 * 200 done; 409 already in the group; 403 its privacy settings let only contacts add it, so the
 * network made an invitation instead (the `add_request` child carries its code); 404 a number the
 * network does not know; 408 (left recently), 406 (the group's creator) and 500 (group full) refused.
 */
export function participantOutcome(action: "add" | "remove" | "promote" | "demote", status: string): EngineParticipantOutcome {
  if (status === "200") return action === "add" ? "added" : action === "remove" ? "removed" : action === "promote" ? "promoted" : "demoted";
  if (action === "add") {
    if (status === "409") return "already_member";
    if (status === "403") return "invited";
    if (status === "404") return "not_on_network";
    return "refused";
  }
  return status === "404" ? "not_member" : "refused";
}

const SETTINGS = { announce: ["announcement", "not_announcement"], locked: ["locked", "unlocked"] } as const;

/** The session of a connection, as the groups use it (session.ts). */
interface GroupSession {
  groupSocket(): EngineSocket;
  listGroups(): Promise<GroupMetadata[]>;
}

/**
 * The engine's groups on the library's group calls. `sessionOf` is the connection's session on the
 * process that holds its socket (conversations' actions reach it the same way); while another
 * process holds it, the call fails transiently and the caller retries.
 */
export class BaileysGroups implements EngineGroups {
  constructor(private readonly sessionOf: (connection: EngineConnection) => GroupSession) {}

  private socketOf(connection: EngineConnection): EngineSocket {
    return this.sessionOf(connection).groupSocket();
  }

  /** One library call on the connection's socket, its refusal as the engine's error. */
  private async call<T>(connection: EngineConnection, groupId: string, work: (socket: EngineSocket) => Promise<T>): Promise<T> {
    const socket = this.socketOf(connection);
    try {
      return await work(socket);
    } catch (err) {
      throw groupError(err, groupId);
    }
  }

  async list(connection: EngineConnection): Promise<EngineGroup[]> {
    const session = this.sessionOf(connection);
    try {
      return (await session.listGroups()).map(groupOf);
    } catch (err) {
      throw groupError(err, "*");
    }
  }

  async get(connection: EngineConnection, groupId: string): Promise<EngineGroup> {
    return groupOf(await this.call(connection, groupId, (s) => s.groupMetadata(groupJid(groupId))));
  }

  /**
   * The library's parse of the create answer lists every number asked for, also those the network
   * did not take (their `error` attribute is dropped): the group is read again, and the numbers
   * missing from it are added once more, which answers each one's status (invited, not on the
   * network, refused).
   */
  async create(connection: EngineConnection, subject: string, phones: string[]): Promise<{ group: EngineGroup; outcomes: EngineParticipantOutcome[] }> {
    const own = phoneOfJid(this.socketOf(connection).user?.id);
    const others = [...new Set(phones)].filter((p) => p !== own);
    const created = await this.call(connection, "new", (s) => s.groupCreate(subject, others.map(phoneJid)));
    let group = await this.get(connection, created.id);
    const taken = new Set(group.participants.map((p) => p.phone));
    const left = others.filter((p) => !taken.has(p));
    const retried = new Map<string, EngineParticipantOutcome>();
    if (left.length) {
      const outcomes = await this.participants(connection, group.id, "add", left);
      left.forEach((p, i) => retried.set(p, outcomes[i]!));
      if (outcomes.includes("added")) group = await this.get(connection, group.id);
    }
    return { group, outcomes: phones.map((p) => (p === own ? "already_member" : (retried.get(p) ?? "added"))) };
  }

  async update(connection: EngineConnection, groupId: string, change: { subject?: string; description?: string; announce?: boolean; locked?: boolean }): Promise<void> {
    const jid = groupJid(groupId);
    await this.call(connection, groupId, async (s) => {
      // Settings first: they always need an admin, so a refusal comes before anything changed.
      for (const setting of ["announce", "locked"] as const) {
        const on = change[setting];
        if (on !== undefined) await s.groupSettingUpdate(jid, SETTINGS[setting][on ? 0 : 1]);
      }
      if (change.subject !== undefined) await s.groupUpdateSubject(jid, change.subject);
      // An empty description removes it (the library sends a delete for a falsy one).
      if (change.description !== undefined) await s.groupUpdateDescription(jid, change.description || undefined);
    });
  }

  async participants(connection: EngineConnection, groupId: string, action: "add" | "remove" | "promote" | "demote", phones: string[]): Promise<EngineParticipantOutcome[]> {
    const unique = [...new Set(phones)];
    const answered = await this.call(connection, groupId, (s) => s.groupParticipantsUpdate(groupJid(groupId), unique.map(phoneJid), action));
    // Each answer names its participant; in a LID-addressed group by LID, with the number beside it.
    const byPhone = new Map<string, string>();
    answered.forEach((a, i) => {
      const phone = phoneOfJid(a.jid) ?? phoneOfJid(a.content?.attrs?.phone_number) ?? (answered.length === unique.length ? unique[i]! : null);
      if (phone) byPhone.set(phone, a.status);
    });
    // A number the answer does not name was not acted on.
    return phones.map((p) => (byPhone.has(p) ? participantOutcome(action, byPhone.get(p)!) : action === "add" ? "refused" : "not_member"));
  }

  async leave(connection: EngineConnection, groupId: string): Promise<void> {
    await this.call(connection, groupId, (s) => s.groupLeave(groupJid(groupId)));
  }

  async inviteCode(connection: EngineConnection, groupId: string): Promise<string> {
    return inviteOf(await this.call(connection, groupId, (s) => s.groupInviteCode(groupJid(groupId))));
  }

  async revokeInvite(connection: EngineConnection, groupId: string): Promise<string> {
    return inviteOf(await this.call(connection, groupId, (s) => s.groupRevokeInvite(groupJid(groupId))));
  }
}

function groupJid(groupId: string): string {
  return recipientJid({ group: groupId });
}

function inviteOf(code: string | undefined): string {
  if (!code) throw new EngineError("the network answered no invite code", false);
  return code;
}
