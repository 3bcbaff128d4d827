// The one mapper from a `messages` row (snake_case, as hand-written SQL returns it) to the entity.
import type { Message } from "../entities.js";

export function messageFromRow(r: Record<string, unknown>): Message {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    connectionId: r.connection_id as string,
    direction: r.direction as Message["direction"],
    status: r.status as Message["status"],
    recipient: r.recipient as Message["recipient"],
    sender: (r.sender as string | null) ?? null,
    body: (r.body as string | null) ?? null,
    media: (r.media as Message["media"]) ?? null,
    location: (r.location as Message["location"]) ?? null,
    context: (r.context as Message["context"]) ?? null,
    metadata: (r.metadata as Message["metadata"]) ?? null,
    contextSensitivity: (r.context_sensitivity as Message["contextSensitivity"]) ?? null,
    sendAt: (r.send_at as Date | null) ?? null,
    timezone: (r.timezone as string | null) ?? null,
    providerMessageId: (r.provider_message_id as string | null) ?? null,
    errorCode: (r.error_code as string | null) ?? null,
    errorMessage: (r.error_message as string | null) ?? null,
    scheduleId: (r.schedule_id as string | null) ?? null,
    replyTo: (r.reply_to as string | null) ?? null,
    reactions: (r.reactions as Message["reactions"]) ?? null,
    editedAt: (r.edited_at as Date | null) ?? null,
    revokedAt: (r.revoked_at as Date | null) ?? null,
    readAt: (r.read_at as Date | null) ?? null,
    poll: (r.poll as Message["poll"]) ?? null,
    pollVotes: (r.poll_votes as Message["pollVotes"]) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}
