// The event outbox. Every change that users can subscribe to writes its event here inside the
// transaction of the change itself, so an event exists exactly when the change committed.
// Webhook delivery fans out from this table.
import type { EntityManager } from "typeorm";
import type { WebhookEvent } from "../../contract/index.js";
import { newId } from "../ids.js";
import type { DomainEvent } from "./entities.js";

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
  await em.query(insertEvents(eventValues(1)), eventParams(event));
  return event.id;
}

/**
 * The statement (or CTE member) inserting the events `rows` answers, as (id, workspace_id, type,
 * connection_id, payload, created_at): each written fanned out already when no live webhook
 * endpoint of its workspace matches it, by the rule the fan-out's join uses
 * (`webhook_endpoint_matches`; docs/decisions.md, "Events no endpoint matches are written fanned
 * out"). In the statement rather than in a trigger: a per-row trigger cost ~28 µs an event.
 */
export function insertEvents(rows: string): string {
  return `INSERT INTO events (id, workspace_id, type, connection_id, payload, created_at, fanned_out_at)
    SELECT e.id, e.workspace_id, e.type, e.connection_id, e.payload::jsonb, e.created_at::timestamptz,
           CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints w
                              WHERE w.workspace_id = e.workspace_id AND w.deleted_at IS NULL
                                AND webhook_endpoint_matches(w, e.workspace_id, e.type, e.connection_id))
                THEN NULL ELSE now() END
      FROM (${rows}) AS e(id, workspace_id, type, connection_id, payload, created_at)`;
}

/** `VALUES` for one event built by `buildEvent`, its parameters (`eventParams`) from `$first` on. */
export function eventValues(first: number): string {
  return `VALUES (${[0, 1, 2, 3, 4, 5].map((i) => `$${first + i}`).join(", ")})`;
}

/** The parameters of an event built by `buildEvent`, in `insertEvents`' column order. */
export function eventParams(e: DomainEvent): unknown[] {
  return [e.id, e.workspaceId, e.type, e.connectionId, JSON.stringify(e.payload), e.createdAt];
}
