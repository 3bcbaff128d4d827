// Groups on the real network: the library's group metadata translated to the engine's and back
// (the session hands the library our cached metadata for its group sends).
import type { GroupMetadata, GroupParticipant } from "@whiskeysockets/baileys";
import type { EngineGroup, EngineGroupParticipant } from "../engine.js";
import { lidOfJid, phoneOfJid } from "./translate.js";

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
