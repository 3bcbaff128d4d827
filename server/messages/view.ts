// A stored message as the API shows it (contract `Message`). Every response and every event
// payload that carries a message goes through here, so the API, webhooks and the SDK agree.
import type { Message as MessageView, MessageLocation, MessageMedia, MessagePoll, TimelineEntry as TimelineView } from "../../contract/index.js";
import type { Message, TimelineEntry } from "./entities.js";

/**
 * `linkedPhone`: the connection's number, shown as `from` of an outbound message when the row
 * does not carry a sender (outbound rows usually do not: the number may change on re-pairing).
 */
export function messageView(message: Message, connectionSlug: string, linkedPhone: string | null = null): MessageView {
  return {
    id: message.id,
    object: "message",
    connection: connectionSlug,
    direction: message.direction,
    status: message.status,
    to: message.recipient,
    from: message.sender ?? (message.direction === "outbound" ? linkedPhone : null),
    body: message.body,
    media: mediaView(message.media),
    location: locationView(message.location),
    context: message.context ?? {},
    metadata: message.metadata ?? {},
    context_sensitivity: message.contextSensitivity ?? "normal",
    send_at: iso(message.sendAt),
    timezone: message.timezone,
    provider_message_id: message.providerMessageId,
    reply_to: message.replyTo,
    reactions: reactionCounts(message.reactions),
    edited_at: iso(message.editedAt),
    revoked_at: iso(message.revokedAt),
    poll: pollView(message.poll, message.pollVotes),
    error: message.errorCode ? { code: message.errorCode, message: message.errorMessage ?? "" } : null,
    created_at: iso(message.createdAt)!,
    updated_at: iso(message.updatedAt)!,
  };
}

export function timelineView(entry: Pick<TimelineEntry, "status" | "at" | "detail">): TimelineView {
  return { status: entry.status, at: iso(entry.at)!, detail: entry.detail };
}

// Stored attachments keep what the sender gave; the response names every part, absent ones null.
function mediaView(media: Message["media"]): MessageMedia | null {
  if (!media) return null;
  return { url: media.url, kind: media.kind ?? null, mimetype: media.mimetype ?? null, filename: media.filename ?? null };
}

/** Reactor → emoji, shown as emoji → how many. */
function reactionCounts(reactions: Message["reactions"]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const emoji of Object.values(reactions ?? {})) counts[emoji] = (counts[emoji] ?? 0) + 1;
  return counts;
}

/** The poll with each option's votes, counted from every voter's current choice. */
function pollView(poll: Message["poll"], votes: Message["pollVotes"]): MessagePoll | null {
  if (!poll) return null;
  const chosen = Object.values(votes ?? {}).flat();
  return { question: poll.question, options: poll.options.map((name) => ({ name, votes: chosen.filter((c) => c === name).length })), selectable: poll.selectable };
}

function locationView(location: Message["location"]): MessageLocation | null {
  if (!location) return null;
  return { latitude: location.latitude, longitude: location.longitude, title: location.title ?? null };
}

// Raw SQL rows may carry timestamps as strings; entities carry Dates.
function iso(value: Date | string | null): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
