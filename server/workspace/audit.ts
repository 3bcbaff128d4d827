// The audit log: who (user), with which credential, did what to which resource, when.
import type { EntityManager } from "typeorm";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import { AuditEntry } from "./entities.js";

export async function audit(
  em: EntityManager,
  actor: Principal,
  action: string,
  target: { type: string; id: string },
  details: Record<string, unknown> = {},
): Promise<void> {
  await em.insert(AuditEntry, {
    id: newId("aud"),
    workspaceId: actor.workspaceId,
    actorUserId: actor.userId,
    credentialType: actor.kind,
    credentialId: actor.kind === "api_key" ? actor.keyId : actor.kind === "session" ? actor.sessionId : actor.tokenId,
    action,
    targetType: target.type,
    targetId: target.id,
    details: details as never,
  });
}
