// Groups in the simulated network: the engine side (what the linked number may do, with the
// network's refusals) and the network side played through the control API (others joining,
// leaving, being promoted; subjects changed). State lives in sandbox_groups and
// sandbox_group_members; a number's membership is its row there.
import { randomBytes } from "node:crypto";
import type { DataSource, EntityManager } from "typeorm";
import { rows } from "../../db/rows.js";
import { groupReport } from "../../groups/view.js";
import { ApiError } from "../../http/errors.js";
import { randomToken } from "../../secrets.js";
import { EngineError, type EngineConnection, type EngineGroup, type EngineGroupParticipant, type EngineGroups, type EngineParticipantOutcome } from "../engine.js";
import { queueReports, type QueuedReport } from "./reports.js";
import type { GroupBody, GroupChangeBody, GroupMembersBody } from "./schemas.js";

type Role = EngineGroupParticipant["role"];
type Db = DataSource | EntityManager;

interface GroupRow {
  id: string;
  subject: string;
  description: string | null;
  announce: boolean;
  locked: boolean;
  created_at: Date;
  participants: { phone: string; role: Role }[];
}

const GROUP_SQL = `
  SELECT g.id, g.subject, g.description, g.announce, g.locked, g.created_at,
         COALESCE((SELECT jsonb_agg(jsonb_build_object('phone', m.phone, 'role', m.role) ORDER BY m.phone)
                     FROM sandbox_group_members m WHERE m.group_id = g.id), '[]'::jsonb) AS participants
    FROM sandbox_groups g`;

function view(g: GroupRow): EngineGroup {
  return {
    id: g.id,
    subject: g.subject,
    description: g.description,
    announce: g.announce,
    locked: g.locked,
    createdAt: new Date(g.created_at),
    participants: g.participants.map((p) => ({ phone: p.phone, lid: null, role: p.role })),
  };
}

const isAdmin = (role: Role | undefined) => role === "admin" || role === "superadmin";

/** A new group id in the network's form: `120363` and twelve digits, `@g.us`. */
function newGroupId(): string {
  return `120363${String(randomBytes(6).readUIntBE(0, 6) % 1e12).padStart(12, "0")}@g.us`;
}

async function groupRow(db: Db, groupId: string): Promise<GroupRow | undefined> {
  const [g] = await rows<GroupRow>(db, `${GROUP_SQL} WHERE g.id = $1`, [groupId]);
  return g;
}

/** How each phone answers being added: a member already, off the network, or its privacy setting. */
async function addOutcomes(db: Db, groupId: string, phones: string[]): Promise<EngineParticipantOutcome[]> {
  const known = await rows<{ phone: string; on_network: boolean | null; group_add: string | null; member: boolean }>(
    db,
    `SELECT p.phone, c.on_network, c.group_add,
            EXISTS (SELECT 1 FROM sandbox_group_members m WHERE m.group_id = $1 AND m.phone = p.phone) AS member
       FROM unnest($2::text[]) AS p(phone) LEFT JOIN sandbox_contacts c ON c.phone = p.phone`,
    [groupId, phones],
  );
  const byPhone = new Map(known.map((k) => [k.phone, k]));
  return phones.map((phone) => {
    const k = byPhone.get(phone)!;
    if (k.member) return "already_member";
    if (k.on_network === false) return "not_on_network";
    if (k.group_add === "invite") return "invited";
    if (k.group_add === "refuse") return "refused";
    return "added";
  });
}

export class SandboxGroups implements EngineGroups {
  constructor(
    private readonly db: DataSource,
    private readonly latency: () => Promise<void>,
    /** Reports were queued: post them now rather than at the next poll. */
    private readonly reported: () => void,
  ) {}

  /**
   * In the transaction of a change to a group: its metadata reported to every linked session of a
   * number in it, and its leaving to each that was in it before (`formerly`) and is no longer.
   */
  private async report(em: EntityManager, groupId: string, formerly: string[]): Promise<void> {
    const group = await groupRow(em, groupId);
    const members = new Set(group?.participants.map((p) => p.phone) ?? []);
    const phones = [...new Set([...members, ...formerly])];
    const sessions = await rows<{ connection_id: string; phone: string }>(em, `SELECT connection_id, phone FROM sandbox_sessions WHERE state = 'linked' AND phone = ANY($1)`, [phones]);
    const reports: QueuedReport[] = sessions.map((s) =>
      members.has(s.phone) && group
        ? { connectionId: s.connection_id, report: { type: "group.metadata", group: groupReport(view(group)) } }
        : { connectionId: s.connection_id, report: { type: "group.participants", group_id: groupId, action: "remove", participants: [{ phone: s.phone, lid: null }] } },
    );
    await queueReports(em, reports, (await this.duplicates(em)));
  }

  private async duplicates(em: EntityManager): Promise<boolean> {
    const [f] = await rows<{ duplicate_callbacks: boolean }>(em, `SELECT duplicate_callbacks FROM sandbox_faults`);
    return f?.duplicate_callbacks ?? false;
  }

  /** Runs a change to a group and reports it, in one transaction. */
  private async changing<T>(groupId: string | null, work: (em: EntityManager) => Promise<{ result: T; groupId: string }>): Promise<T> {
    const out = await this.db.transaction(async (em) => {
      const formerly = groupId ? ((await groupRow(em, groupId))?.participants.map((p) => p.phone) ?? []) : [];
      const done = await work(em);
      await this.report(em, done.groupId, formerly);
      return done.result;
    });
    this.reported();
    return out;
  }

  /** The linked number of a running session, or the engine's refusal. */
  private async ownPhone(connection: EngineConnection): Promise<string> {
    await this.latency();
    const [s] = await rows<{ phone: string | null }>(this.db, `SELECT phone FROM sandbox_sessions WHERE connection_id = $1 AND state = 'linked' AND running`, [
      connection.id,
    ]);
    if (!s?.phone) throw new EngineError("the sandbox session is not linked or is stopped", false, "session_not_linked");
    return s.phone;
  }

  /** The group and the linked number's role in it; `group_not_found` unless it is a member. */
  private async membership(db: Db, phone: string, groupId: string): Promise<{ group: GroupRow; role: Role }> {
    const group = await groupRow(db, groupId);
    const role = group?.participants.find((p) => p.phone === phone)?.role;
    if (!group || !role) throw new EngineError(`not a member of group ${groupId}`, true, "group_not_found");
    return { group, role };
  }

  private async asAdmin(db: Db, phone: string, groupId: string): Promise<GroupRow> {
    const { group, role } = await this.membership(db, phone, groupId);
    if (!isAdmin(role)) throw new EngineError(`not an admin of group ${groupId}`, true, "not_group_admin");
    return group;
  }

  async list(connection: EngineConnection): Promise<EngineGroup[]> {
    const phone = await this.ownPhone(connection);
    const groups = await rows<GroupRow>(this.db, `${GROUP_SQL} WHERE g.id IN (SELECT group_id FROM sandbox_group_members WHERE phone = $1)`, [phone]);
    return groups.map(view);
  }

  async get(connection: EngineConnection, groupId: string): Promise<EngineGroup> {
    const phone = await this.ownPhone(connection);
    return view((await this.membership(this.db, phone, groupId)).group);
  }

  async create(connection: EngineConnection, subject: string, phones: string[]): Promise<{ group: EngineGroup; outcomes: EngineParticipantOutcome[] }> {
    const own = await this.ownPhone(connection);
    const id = newGroupId();
    return this.changing(null, async (em) => {
      await em.query(`INSERT INTO sandbox_groups (id, subject) VALUES ($1, $2)`, [id, subject]);
      await em.query(`INSERT INTO sandbox_group_members (group_id, phone, role) VALUES ($1, $2, 'superadmin')`, [id, own]);
      const unique = [...new Set(phones)];
      const outcomes = await addOutcomes(em, id, unique);
      await addMembers(em, id, unique.filter((_, i) => outcomes[i] === "added"));
      const byPhone = new Map(unique.map((p, i) => [p, outcomes[i]!]));
      return { groupId: id, result: { group: view((await groupRow(em, id))!), outcomes: phones.map((p) => (p === own ? "already_member" : byPhone.get(p)!)) } };
    });
  }

  async update(connection: EngineConnection, groupId: string, change: { subject?: string; description?: string; announce?: boolean; locked?: boolean }): Promise<void> {
    const own = await this.ownPhone(connection);
    await this.changing(groupId, async (em) => {
      const { group, role } = await this.membership(em, own, groupId);
      // Settings always need an admin; subject and description only while the group is locked.
      const settings = change.announce !== undefined || change.locked !== undefined;
      if ((settings || group.locked) && !isAdmin(role)) throw new EngineError(`not an admin of group ${groupId}`, true, "not_group_admin");
      await changeGroup(em, groupId, change);
      return { groupId, result: undefined };
    });
  }

  async participants(connection: EngineConnection, groupId: string, action: "add" | "remove" | "promote" | "demote", phones: string[]): Promise<EngineParticipantOutcome[]> {
    const own = await this.ownPhone(connection);
    return this.changing(groupId, async (em) => ({ groupId, result: await this.act(em, own, groupId, action, phones) }));
  }

  private async act(em: EntityManager, own: string, groupId: string, action: "add" | "remove" | "promote" | "demote", phones: string[]): Promise<EngineParticipantOutcome[]> {
    {
      const group = await this.asAdmin(em, own, groupId);
      if (action === "add") {
        const unique = [...new Set(phones)];
        const outcomes = await addOutcomes(em, groupId, unique);
        await addMembers(em, groupId, unique.filter((_, i) => outcomes[i] === "added"));
        const byPhone = new Map(unique.map((p, i) => [p, outcomes[i]!]));
        return phones.map((p) => byPhone.get(p)!);
      }
      const roles = new Map(group.participants.map((p) => [p.phone, p.role]));
      const outcomes: EngineParticipantOutcome[] = [];
      for (const phone of phones) {
        const role = roles.get(phone);
        if (!role) outcomes.push("not_member");
        else if (role === "superadmin") outcomes.push("refused");
        else if (action === "remove") {
          await em.query(`DELETE FROM sandbox_group_members WHERE group_id = $1 AND phone = $2`, [groupId, phone]);
          roles.delete(phone);
          outcomes.push("removed");
        } else {
          await em.query(`UPDATE sandbox_group_members SET role = $3 WHERE group_id = $1 AND phone = $2`, [groupId, phone, action === "promote" ? "admin" : "member"]);
          outcomes.push(action === "promote" ? "promoted" : "demoted");
        }
      }
      return outcomes;
    }
  }

  async leave(connection: EngineConnection, groupId: string): Promise<void> {
    const own = await this.ownPhone(connection);
    await this.changing(groupId, async (em) => {
      await this.membership(em, own, groupId);
      await em.query(`DELETE FROM sandbox_group_members WHERE group_id = $1 AND phone = $2`, [groupId, own]);
      return { groupId, result: undefined };
    });
  }

  async inviteCode(connection: EngineConnection, groupId: string): Promise<string> {
    const own = await this.ownPhone(connection);
    await this.asAdmin(this.db, own, groupId);
    const [row] = await rows<{ invite_code: string }>(
      this.db,
      `UPDATE sandbox_groups SET invite_code = COALESCE(invite_code, $2) WHERE id = $1 RETURNING invite_code`,
      [groupId, randomToken(16)],
    );
    return row!.invite_code;
  }

  async revokeInvite(connection: EngineConnection, groupId: string): Promise<string> {
    const own = await this.ownPhone(connection);
    await this.asAdmin(this.db, own, groupId);
    const [row] = await rows<{ invite_code: string }>(this.db, `UPDATE sandbox_groups SET invite_code = $2 WHERE id = $1 RETURNING invite_code`, [groupId, randomToken(16)]);
    return row!.invite_code;
  }

  // ---- The network side, played through the control API ----

/** Makes a group that the linked number `phone` is in, with its role, and other members. */
  async networkCreate(body: GroupBody): Promise<EngineGroup> {
    const id = newGroupId();
    return this.changing(null, async (em) => {
    await em.query(`INSERT INTO sandbox_groups (id, subject, description, announce, locked) VALUES ($1, $2, $3, $4, $5)`, [
      id,
      body.subject,
      body.description ?? null,
      body.announce,
      body.locked,
    ]);
    await addMembers(em, id, [body.phone], body.role);
    for (const m of body.members) await addMembers(em, id, [m.phone], m.role);
    return { groupId: id, result: view((await groupRow(em, id))!) };
  });
  }

/** Others join, leave, are promoted or demoted: no admin rule applies to the network itself. */
  async networkMembers(groupId: string, body: GroupMembersBody): Promise<EngineGroup> {
  await this.known(groupId);
  return this.changing(groupId, async (em) => {
    if (body.action === "join") await addMembers(em, groupId, body.phones);
    else if (body.action === "leave") await em.query(`DELETE FROM sandbox_group_members WHERE group_id = $1 AND phone = ANY($2)`, [groupId, body.phones]);
    else
      await em.query(`UPDATE sandbox_group_members SET role = $3 WHERE group_id = $1 AND phone = ANY($2) AND role <> 'superadmin'`, [
        groupId,
        body.phones,
        body.action === "promote" ? "admin" : "member",
      ]);
    return { groupId, result: view((await groupRow(em, groupId))!) };
  });
  }

/** Someone in the group changes its subject, description or settings. */
  async networkChange(groupId: string, body: GroupChangeBody): Promise<EngineGroup> {
  await this.known(groupId);
  return this.changing(groupId, async (em) => {
    await changeGroup(em, groupId, body);
    return { groupId, result: view((await groupRow(em, groupId))!) };
  });
  }

  private async known(groupId: string): Promise<void> {
    if (!(await groupRow(this.db, groupId))) throw ApiError.notFound("sandbox group");
  }
}

async function addMembers(db: Db, groupId: string, phones: string[], role: Role = "member"): Promise<void> {
  if (!phones.length) return;
  await db.query(
    `INSERT INTO sandbox_group_members (group_id, phone, role) SELECT $1, p, $3 FROM unnest($2::text[]) AS p ON CONFLICT DO NOTHING`,
    [groupId, phones, role],
  );
}

async function changeGroup(db: Db, groupId: string, change: { subject?: string; description?: string; announce?: boolean; locked?: boolean }): Promise<void> {
  await db.query(
    `UPDATE sandbox_groups SET subject = COALESCE($2, subject),
            description = CASE WHEN $3::text IS NULL THEN description WHEN $3 = '' THEN NULL ELSE $3 END,
            announce = COALESCE($4, announce), locked = COALESCE($5, locked)
      WHERE id = $1`,
    [groupId, change.subject ?? null, change.description ?? null, change.announce ?? null, change.locked ?? null],
  );
}

