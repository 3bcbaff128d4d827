// The groups of each connection as the network last reported them (table group_metadata): the
// group routes read it instead of asking the network, and the network's group events keep it
// fresh. Every change to it goes through applyGroup, which records the events a change makes:
// `group.joined` for a group new to the connection, `group.updated` for a changed subject,
// description or setting, `group.participants` for who joined, left, was promoted or demoted.
import type { EntityManager } from "typeorm";
import type { GroupParticipantChange } from "../../contract/index.js";
import type { Connection } from "../connections/entities.js";
import { rows } from "../db/rows.js";
import type { EngineGroup, EngineGroupParticipant } from "../engines/engine.js";
import { recordEvent } from "../events/record.js";
import { groupSummary, groupView } from "./view.js";

interface CachedRow {
  group_id: string;
  subject: string;
  description: string | null;
  announce: boolean;
  locked: boolean;
  created_at: Date;
  participants: EngineGroupParticipant[];
}

export function fromRow(r: CachedRow): EngineGroup {
  return {
    id: r.group_id,
    subject: r.subject,
    description: r.description,
    announce: r.announce,
    locked: r.locked,
    createdAt: new Date(r.created_at),
    participants: r.participants,
  };
}

const COLUMNS = "group_id, subject, description, announce, locked, created_at, participants";

export async function cachedGroup(em: EntityManager, connectionId: string, groupId: string, lock = false): Promise<EngineGroup | null> {
  const [r] = await rows<CachedRow>(em, `SELECT ${COLUMNS} FROM group_metadata WHERE connection_id = $1 AND group_id = $2 ${lock ? "FOR UPDATE" : ""}`, [
    connectionId,
    groupId,
  ]);
  return r ? fromRow(r) : null;
}

/** A page of the connection's cached groups, newest first, after (created_at, id) when given. */
export async function cachedGroups(em: EntityManager, connectionId: string, limit: number, after?: { created_at: string; id: string }): Promise<EngineGroup[]> {
  const found = await rows<CachedRow>(
    em,
    `SELECT ${COLUMNS} FROM group_metadata WHERE connection_id = $1 ${after ? "AND (created_at, group_id) < ($3::timestamptz, $4)" : ""}
      ORDER BY created_at DESC, group_id DESC LIMIT $2`,
    after ? [connectionId, limit, after.created_at, after.id] : [connectionId, limit],
  );
  return found.map(fromRow);
}

/** Whether the connection's full list was fetched (from then on, events keep it fresh). */
export async function groupsListed(em: EntityManager, connectionId: string): Promise<boolean> {
  return (await rows(em, `SELECT 1 FROM group_lists WHERE connection_id = $1`, [connectionId])).length > 0;
}

/** The full list as fetched from the network: replaces the cache without events (nothing changed, we only learnt it). */
export async function storeGroupList(em: EntityManager, connectionId: string, groups: EngineGroup[]): Promise<void> {
  await em.query(`DELETE FROM group_metadata WHERE connection_id = $1`, [connectionId]);
  for (const g of groups) await store(em, connectionId, g);
  await em.query(`INSERT INTO group_lists (connection_id) VALUES ($1) ON CONFLICT (connection_id) DO UPDATE SET fetched_at = now()`, [connectionId]);
}

/**
 * Stores a group: replacing what is cached, or (`onlyIfNew`) only when the connection has none,
 * answering false when another transaction stored one first.
 */
async function store(em: EntityManager, connectionId: string, g: EngineGroup, onlyIfNew = false): Promise<boolean> {
  const stored = await rows(
    em,
    `INSERT INTO group_metadata (connection_id, group_id, subject, description, announce, locked, created_at, participants)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (connection_id, group_id) DO ${
       onlyIfNew
         ? "NOTHING"
         : `UPDATE SET subject = EXCLUDED.subject, description = EXCLUDED.description,
       announce = EXCLUDED.announce, locked = EXCLUDED.locked, participants = EXCLUDED.participants, updated_at = now()`
     }
     RETURNING group_id`,
    [connectionId, g.id, g.subject, g.description, g.announce, g.locked, g.createdAt, JSON.stringify(g.participants)],
  );
  return stored.length > 0;
}

const key = (p: { phone: string | null; lid: string | null }) => p.phone ?? p.lid ?? "";

/** Who joined, left, was promoted or demoted between two participant lists. */
function participantChanges(before: EngineGroupParticipant[], after: EngineGroupParticipant[]): GroupParticipantChange[] {
  const old = new Map(before.map((p) => [key(p), p]));
  const now = new Map(after.map((p) => [key(p), p]));
  const changes: GroupParticipantChange[] = [];
  for (const [k, p] of now) {
    const was = old.get(k);
    if (!was) changes.push({ phone: p.phone, lid: p.lid, change: "joined" });
    else if (was.role === "member" && p.role !== "member") changes.push({ phone: p.phone, lid: p.lid, change: "promoted" });
    else if (was.role !== "member" && p.role === "member") changes.push({ phone: p.phone, lid: p.lid, change: "demoted" });
  }
  for (const [k, p] of old) if (!now.has(k)) changes.push({ phone: p.phone, lid: p.lid, change: "left" });
  return changes;
}

/**
 * The group as the network now has it (`next`), or gone from the connection (`null`: the number
 * left or was removed). Stores it and records the events of the difference; a report that changes
 * nothing (our own change echoed back, a redelivery) records none.
 */
export async function applyGroup(em: EntityManager, connection: Pick<Connection, "id" | "slug" | "workspaceId" | "phone">, groupId: string, next: EngineGroup | null): Promise<void> {
  let before = await cachedGroup(em, connection.id, groupId, true);
  const event = (type: "group.joined" | "group.updated" | "group.participants", data: Record<string, unknown>) =>
    recordEvent(em, { workspaceId: connection.workspaceId, type, connection: { id: connection.id, slug: connection.slug }, data });
  if (!next) {
    if (!before) return;
    await em.query(`DELETE FROM group_metadata WHERE connection_id = $1 AND group_id = $2`, [connection.id, groupId]);
    const own = before.participants.filter((p) => p.phone === connection.phone);
    const after = { ...before, participants: before.participants.filter((p) => p.phone !== connection.phone) };
    await event("group.participants", { group: groupSummary(after, connection.phone), changes: own.map((p) => ({ phone: p.phone, lid: p.lid, change: "left" })) });
    return;
  }
  if (!before) {
    // Inserted only if still new: the API's own change and the network's echo of it may both find
    // no row, and only the one that stores it records `group.joined`; the other (waiting here for
    // it to commit) then sees what it stored and records only a difference.
    if (await store(em, connection.id, next, true)) {
      await event("group.joined", groupView(next, connection.phone));
      return;
    }
    before = await cachedGroup(em, connection.id, groupId, true);
  }
  await store(em, connection.id, next);
  if (!before) return;
  const changed = (["subject", "description", "announce", "locked"] as const).filter((f) => before[f] !== next[f]);
  if (changed.length) await event("group.updated", { group: groupView(next, connection.phone), changed });
  const changes = participantChanges(before.participants, next.participants);
  if (changes.length) await event("group.participants", { group: groupSummary(next, connection.phone), changes });
}

/** A participants report applied to the cached group; nothing when the group is not cached (its metadata follows). */
export async function applyParticipants(
  em: EntityManager,
  connection: Pick<Connection, "id" | "slug" | "workspaceId" | "phone">,
  groupId: string,
  action: "add" | "remove" | "promote" | "demote",
  people: { phone: string | null; lid: string | null }[],
): Promise<void> {
  const before = await cachedGroup(em, connection.id, groupId, true);
  if (!before) return;
  const named = new Set(people.map(key));
  if (action === "remove" && people.some((p) => p.phone !== null && p.phone === connection.phone)) return applyGroup(em, connection, groupId, null);
  let participants = before.participants;
  if (action === "add") participants = [...participants, ...people.filter((p) => !participants.some((q) => key(q) === key(p))).map((p) => ({ ...p, role: "member" as const }))];
  else if (action === "remove") participants = participants.filter((p) => !named.has(key(p)));
  else participants = participants.map((p) => (named.has(key(p)) && p.role !== "superadmin" ? { ...p, role: action === "promote" ? ("admin" as const) : ("member" as const) } : p));
  await applyGroup(em, connection, groupId, { ...before, participants });
}
