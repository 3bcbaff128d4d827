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

/** The row for an event, with its payload exactly as webhooks deliver it. */
export function buildEvent(input: EventInput, createdAt = new Date()): DomainEvent {
  const id = newId("evt", createdAt.getTime());
  return {
    id,
    workspaceId: input.workspaceId,
    type: input.type,
    connectionId: input.connection?.id ?? null,
    payload: { id, type: input.type, created_at: createdAt.toISOString(), connection: input.connection?.slug ?? null, data: input.data },
    createdAt,
    fannedOutAt: null,
  };
}

export async function recordEvent(em: EntityManager, input: EventInput): Promise<string> {
  const event = buildEvent(input);
  await em.insert(DomainEvent, event as never);
  return event.id;
}

/** SQL for a CTE member inserting an event built by `buildEvent`; parameters in the given order. */
export const EVENT_INSERT_COLUMNS = "(id, workspace_id, type, connection_id, payload, created_at)";
export function eventParams(e: DomainEvent): unknown[] {
  return [e.id, e.workspaceId, e.type, e.connectionId, JSON.stringify(e.payload), e.createdAt];
}
