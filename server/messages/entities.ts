// Message rows as the code handles them. Messages are written and read only through SQL (the
// store, server/messages/store/, and the reads): these are row types, not TypeORM entities.
import type { ContextSensitivity, Location, Media, MessageStatus, Recipient } from "../../contract/index.js";

export interface Message {
  id: string;
  workspaceId: string;
  connectionId: string;
  direction: "inbound" | "outbound";
  status: MessageStatus;
  /** Outbound: the recipient as sent. Inbound: the linked number or `{group}` it arrived on. */
  recipient: Recipient;
  /** Inbound: who sent it. Outbound: null. */
  sender: string | null;
  body: string | null;
  media: Media | null;
  location: Location | null;
  context: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  contextSensitivity: ContextSensitivity | null;
  sendAt: Date | null;
  timezone: string | null;
  providerMessageId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  scheduleId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface TimelineEntry {
  id: string;
  messageId: string;
  status: MessageStatus;
  at: Date;
  detail: string | null;
}

