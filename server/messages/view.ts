// A stored message as the API shows it (contract `Message`). Every response and every event
// payload that carries a message goes through here, so the API, webhooks and the SDK agree.
import type { Message as MessageView, MessageLocation, MessageMedia, TimelineEntry as TimelineView } from "../../contract/index.js";
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

function locationView(location: Message["location"]): MessageLocation | null {
  if (!location) return null;
  return { latitude: location.latitude, longitude: location.longitude, title: location.title ?? null };
}

// Raw SQL rows may carry timestamps as strings; entities carry Dates.
function iso(value: Date | string | null): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
