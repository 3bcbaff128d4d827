// `message.outbound_from_phone`: the person holding the linked phone wrote a message from the
// phone itself. It is recorded as an outbound message the gateway did not send, status `sent`,
// with `metadata.origin = "phone"`, so that readers (and a later assistant, which leaves such a
// conversation to the human) can tell it from the gateway's own sends. Not counted as usage.
import type { EntityManager } from "typeorm";
import type { PhoneOutboundEvent } from "../../contract/index.js";
import type { Connection } from "../connections/entities.js";
import { recordEvent } from "../events/record.js";
import { newId } from "../ids.js";
import { Message, TimelineEntry } from "../messages/entities.js";
import { messageView } from "../messages/view.js";

export const PHONE_ORIGIN = { origin: "phone" } as const;

export async function recordPhoneOutbound(em: EntityManager, connection: Connection, event: PhoneOutboundEvent): Promise<{ accepted: boolean }> {
  const recipient = event.group !== undefined ? { group: event.group } : event.to;
  if (recipient === undefined) return { accepted: false };
  const at = new Date(event.timestamp);
  const now = new Date();
  const message = em.create(Message, {
    id: newId("msg"),
    workspaceId: connection.workspaceId,
    connectionId: connection.id,
    direction: "outbound",
    status: "sent",
    recipient,
    sender: connection.phone,
    body: event.body ?? null,
    media: event.media ?? null,
    location: event.location ?? null,
    context: null,
    metadata: { ...PHONE_ORIGIN },
    contextSensitivity: null,
    sendAt: null,
    timezone: null,
    providerMessageId: event.provider_message_id,
    errorCode: null,
    errorMessage: null,
    scheduleId: null,
    createdAt: now,
    updatedAt: now,
  });
  await em.insert(Message, message as never);
  await em.insert(TimelineEntry, { messageId: message.id, status: "sent", at, detail: "written on the linked phone, not sent by the gateway" });
  await recordEvent(em, {
    workspaceId: connection.workspaceId,
    type: "message.sent",
    connection: { id: connection.id, slug: connection.slug },
    data: messageView(message, connection.slug, connection.phone),
  });
  return { accepted: true };
}
