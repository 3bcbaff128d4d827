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
  /** Our id of the message this one quotes. */
  replyTo: string | null;
  /** Reactor (a contact's address, or "me" for ours) → emoji. */
  reactions: Record<string, string> | null;
  editedAt: Date | null;
  revokedAt: Date | null;
  /** Inbound: when we marked it read. */
  readAt: Date | null;
  poll: PollSpec | null;
  /** Voter → the names of the options they chose. */
  pollVotes: Record<string, string[]> | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A poll as sent: its question, its options' names, how many a voter may pick. */
export interface PollSpec {
  question: string;
  options: string[];
  selectable: number;
}

/** The columns a conversation adds to a new message, all empty. */
export const NO_CONVERSATION = {
  replyTo: null,
  reactions: null,
  editedAt: null,
  revokedAt: null,
  readAt: null,
  poll: null,
  pollVotes: null,
} as const satisfies Partial<Message>;

export interface TimelineEntry {
  id: string;
  messageId: string;
  status: MessageStatus;
  at: Date;
  detail: string | null;
}

