// What the network tells of a chat besides messages (docs/conversations.md): a contact's
// reaction, edit, revoke or poll vote updates the message acted on and becomes its event; a
// contact's typing becomes a `chat.presence` event and nothing else. Written inside the callback's
// transaction, next to its dedupe rows, so a redelivered report changes nothing.
import type { EntityManager } from "typeorm";
import type { ConversationEvent, ProviderEvent, WebhookEvent } from "../../../contract/index.js";
import type { Connection } from "../../connections/entities.js";
import { rows } from "../../db/rows.js";
import { buildEvent, eventParams, eventValues, insertEvents } from "../../events/record.js";
import type { Message } from "../entities.js";
import { json } from "./accept.js";
import { messageFromRow } from "./row.js";

const CONVERSATION_TYPES: ReadonlySet<string> = new Set<ConversationEvent["type"]>([
  "message.reaction",
  "message.edited",
  "message.revoked",
  "message.poll_vote",
  "chat.presence",
]);

export function isConversationEvent(event: ProviderEvent): event is ConversationEvent {
  return CONVERSATION_TYPES.has(event.type);
}

/** Applies one report; true when it changed something (a report about an unknown message is ignored). */
export async function applyConversationEvent(em: EntityManager, connection: Connection, event: ConversationEvent): Promise<boolean> {
  if (event.type === "chat.presence") {
    const chat = event.group !== undefined ? `group:${event.group}` : event.from;
    await insertEvent(em, connection, "chat.presence", { chat, from: event.from, state: event.state });
    return true;
  }
  const [row] = await rows(em, `SELECT * FROM messages WHERE connection_id = $1 AND provider_message_id = $2 ORDER BY created_at LIMIT 1 FOR NO KEY UPDATE`, [
    connection.id,
    event.provider_message_id,
  ]);
  if (!row) return false;
  const message = messageFromRow(row);
  const at = new Date(event.timestamp);
  // Only its sender edits or deletes a message: a report that says otherwise changes nothing.
  const theirs = message.direction === "inbound" && message.sender === event.from;
  let changed: Partial<Message>;
  let data: Record<string, unknown> = { message_id: message.id, from: event.from };
  switch (event.type) {
    case "message.reaction": {
      changed = { reactions: { ...without(message.reactions, event.from), ...(event.emoji !== "" && { [event.from]: event.emoji }) } };
      data = { ...data, emoji: event.emoji };
      break;
    }
    case "message.edited":
      if (!theirs || message.revokedAt) return false;
      changed = { body: event.body, editedAt: at };
      break;
    case "message.revoked":
      if (!theirs || message.revokedAt) return false;
      changed = { revokedAt: at };
      break;
    case "message.poll_vote": {
      if (!message.poll) return false;
      // Names of the poll's options, each once, no more than a voter may pick.
      const options = [...new Set(event.options)].filter((o) => message.poll!.options.includes(o)).slice(0, message.poll.selectable);
      changed = { pollVotes: { ...without(message.pollVotes, event.from), ...(options.length > 0 && { [event.from]: options }) } };
      data = { ...data, options };
      break;
    }
  }
  const next: Message = { ...message, ...changed };
  const event_ = buildEvent({ workspaceId: connection.workspaceId, type: event.type, connection, data });
  await em.query(
    `WITH m AS (
       UPDATE messages SET body = $2, reactions = $3::jsonb, edited_at = $4, revoked_at = $5, poll_votes = $6::jsonb, updated_at = now()
        WHERE id = $1
     )
     ${insertEvents(eventValues(7))}`,
    [message.id, next.body, json(next.reactions), next.editedAt, next.revokedAt, json(next.pollVotes), ...eventParams(event_)],
  );
  return true;
}

/** `record` without `key`. */
function without<T>(record: Record<string, T> | null, key: string): Record<string, T> {
  return Object.fromEntries(Object.entries(record ?? {}).filter(([k]) => k !== key));
}

async function insertEvent(em: EntityManager, connection: Connection, type: WebhookEvent, data: Record<string, unknown>): Promise<void> {
  const event = buildEvent({ workspaceId: connection.workspaceId, type, connection, data });
  await em.query(insertEvents(eventValues(1)), eventParams(event));
}
