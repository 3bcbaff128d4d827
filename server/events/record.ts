// The event outbox. Every change that users can subscribe to writes its event here inside the
// transaction of the change itself, so an event exists exactly when the change committed.
// Webhook delivery fans out from this table.
import type { EntityManager } from "typeorm";
import type { WebhookEvent } from "../../contract/index.js";
import { newId } from "../ids.js";
import { DomainEvent } from "./entities.js";

export interface EventInput {
  workspaceId: string;
  type: WebhookEvent;
  connection: { id: string; slug: string } | null;
  data: Record<string, unknown>;
}

export async function recordEvent(em: EntityManager, input: EventInput): Promise<string> {
  const id = newId("evt");
  const createdAt = new Date();
  await em.insert(DomainEvent, {
    id,
    workspaceId: input.workspaceId,
    type: input.type,
    connectionId: input.connection?.id ?? null,
    payload: { id, type: input.type, created_at: createdAt.toISOString(), connection: input.connection?.slug ?? null, data: input.data } as never,
    createdAt,
    fannedOutAt: null,
  });
  return id;
}
