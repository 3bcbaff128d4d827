// How a group reads in the API: the network's metadata seen from the linked number.
import type { Group, GroupMetadataEvent, GroupSummary } from "../../contract/index.js";
import type { EngineGroup } from "../engines/engine.js";

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

/** A group as an engine reports it (provider event `group.metadata`). */
export function groupReport(g: EngineGroup): GroupMetadataEvent["group"] {
  const { createdAt, ...rest } = g;
  return { ...rest, created_at: createdAt.toISOString() };
}
