// What the gateway needs from a linked-device engine, and nothing more. An engine runs the
// session of one or more numbers; it reports back (state changes, inbound messages, delivery
// updates) in the wire format of contract/ops.ts (ProviderEvent), applied by
// ProviderCallbackService: over HTTP to POST /v1/provider/{providerName}/{callback_token} (the
// sandbox, or an adapter to an external engine server), or in process (the Baileys engine).
// Messaging code never changes for a new engine.
import type { Readable } from "node:stream";
import type { Location, Media, PresenceState, Recipient } from "../../contract/index.js";

export interface EngineConnection {
  /** Our connection id: the engine's key for the session. */
  id: string;
  /** Where the engine posts its reports for this connection (includes the callback token). */
  callbackUrl: string;
}

export interface OutboundMessage {
  /** Our message id. The engine must deduplicate on it: a retried hand-off never sends twice. */
  messageId: string;
  to: Recipient;
  body: string | null;
  media: Media | null;
  location: Location | null;
  /** A reply: the message it quotes. */
  quoted?: MessageRef | null;
  /** A poll, sent instead of a body. */
  poll?: OutboundPoll | null;
}

export interface OutboundPoll {
  question: string;
  options: string[];
  /** How many options a voter may pick. */
  selectable: number;
}

/** A message the network carried, as an engine addresses it to act on it (quote, react, edit, revoke, read). */
export interface MessageRef {
  /** Our message id. */
  messageId: string;
  /** The network's id of it. */
  providerMessageId: string;
  /** The chat it is in: the contact's address, or `{group}`. */
  chat: Recipient;
  /** Whether the linked number sent it. */
  fromMe: boolean;
  /** Who sent it, when a contact did (in a group: the participant). */
  sender: string | null;
}

/** A message's media as the network serves it: streamed, never held whole. */
export interface MediaDownload {
  stream: Readable;
  mimetype: string;
  filename: string | null;
  /** Bytes, when known before streaming. */
  size: number | null;
}

/** A failure the engine reports; `permanent` ones are not retried. */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly code = permanent ? "engine_rejected" : "engine_unavailable",
  ) {
    super(message);
  }
}

export interface NumberCheck {
  /** false when the engine cannot say (e.g. the session is not connected). */
  checked: boolean;
  onNetwork: boolean | null;
}

/** A participant of a group as the network gives it: a phone number, a LID, or both. */
export interface EngineGroupParticipant {
  phone: string | null;
  lid: string | null;
  role: "member" | "admin" | "superadmin";
}

/** A group's metadata as the network gives it. */
export interface EngineGroup {
  id: string;
  subject: string;
  description: string | null;
  announce: boolean;
  locked: boolean;
  createdAt: Date;
  participants: EngineGroupParticipant[];
}

export type EngineParticipantOutcome =
  | "added"
  | "already_member"
  | "not_on_network"
  | "invited"
  | "refused"
  | "removed"
  | "promoted"
  | "demoted"
  | "not_member";

/**
 * The groups of a linked number. Failures are EngineErrors whose code says which: `group_not_found`
 * (the number is not in the group), `not_group_admin` (the network requires an admin), or
 * `session_not_linked`.
 */
export interface EngineGroups {
  /** Every group the number is in, with participants (one network request). */
  list(connection: EngineConnection): Promise<EngineGroup[]>;
  get(connection: EngineConnection, groupId: string): Promise<EngineGroup>;
  create(connection: EngineConnection, subject: string, phones: string[]): Promise<{ group: EngineGroup; outcomes: EngineParticipantOutcome[] }>;
  update(connection: EngineConnection, groupId: string, change: { subject?: string; description?: string; announce?: boolean; locked?: boolean }): Promise<void>;
  participants(connection: EngineConnection, groupId: string, action: "add" | "remove" | "promote" | "demote", phones: string[]): Promise<EngineParticipantOutcome[]>;
  leave(connection: EngineConnection, groupId: string): Promise<void>;
  inviteCode(connection: EngineConnection, groupId: string): Promise<string>;
  /** Revokes the current invite code; answers the new one. */
  revokeInvite(connection: EngineConnection, groupId: string): Promise<string>;
}

/** How the phone will link: scan a QR code, or type a code shown for its number (E.164). */
export type PairingRequest = { method: "qr" } | { method: "code"; phone: string };

/** Milliseconds between two messages of one connection: each gap is drawn in [minMs, maxMs]. */
export interface Pace {
  minMs: number;
  maxMs: number;
}

export interface Engine {
  /** The `providerName` in callback URLs, e.g. "sandbox". */
  readonly name: string;
  /**
   * Optional: the spacing the engine's network tolerates between two messages of one connection
   * (a real number is flagged for bursts). The dispatcher never goes faster than this, nor than
   * DISPATCH_RATE_PER_CONNECTION, summed over every gateway process.
   */
  readonly pace?: Pace;
  /**
   * Begin pairing; returns the pairing payload: the QR code's content, or with `method: "code"`
   * the code (`ABCD-EFGH`) the phone of `phone` types to link.
   */
  startPairing(connection: EngineConnection, request: PairingRequest): Promise<{ payload: string }>;
  /**
   * Optional: the pairing payload (QR content or code) to show now, for engines whose payload
   * rotates while the grant is open (a real socket's QR and code refresh every 20 s or so); null
   * when there is none.
   */
  currentPairing?(connection: EngineConnection): Promise<string | null>;
  /** Hand a message to the network; returns the provider's message id. Idempotent on messageId. */
  send(connection: EngineConnection, message: OutboundMessage): Promise<{ providerMessageId: string }>;
  /**
   * Optional: several messages of one connection, handed to the network in their order in one
   * call; an outcome per message, the provider's id or the EngineError for that message. The
   * dispatcher uses it when pacing lets several go at once; without it, it calls send() for each.
   */
  sendMany?(connection: EngineConnection, messages: OutboundMessage[]): Promise<({ providerMessageId: string } | EngineError)[]>;
  checkNumber(connection: EngineConnection, phone: string): Promise<NumberCheck>;
  /** Optional: the groups of the linked number; without it the group routes answer 503. */
  readonly groups?: EngineGroups;
  // Conversations (docs/conversations.md). Optional: an engine without one answers 409 for it.
  /** Reacts to a message with one emoji; "" removes our reaction. */
  react?(connection: EngineConnection, target: MessageRef, emoji: string): Promise<void>;
  /** Replaces the text of a message we sent. */
  edit?(connection: EngineConnection, target: MessageRef, body: string): Promise<void>;
  /** Deletes a message we sent, for everyone. */
  revoke?(connection: EngineConnection, target: MessageRef): Promise<void>;
  /** Marks inbound messages of one chat read. */
  markRead?(connection: EngineConnection, targets: MessageRef[]): Promise<void>;
  /** Shows typing or recording in a chat, or clears it. */
  sendPresence?(connection: EngineConnection, chat: Recipient, state: PresenceState): Promise<void>;
  /**
   * Opens a message's media (fetched and decrypted on demand). EngineError codes: `media_gone`
   * when the network no longer has it, `media_too_large` past `maxBytes`.
   */
  downloadMedia?(connection: EngineConnection, target: MessageRef, media: Media, maxBytes: number): Promise<MediaDownload>;
  /**
   * Unlink the device (connection deleted) and forget the session. The gateway asked for it, so
   * the engine sends no `connection.state` report about it.
   */
  logout(connection: EngineConnection): Promise<void>;
  /** Release the session's resources (suspend); the link survives. Reports wait until `start`. */
  stop(connection: EngineConnection): Promise<void>;
  /** Take the session up again after `stop` (resume). */
  start(connection: EngineConnection): Promise<void>;
  /** Process start, after the HTTP server listens: begin reporting (and restore sessions). */
  open?(): Promise<void>;
  /** Process shutdown, before the HTTP server closes: finish reports in flight, then stop. */
  close?(): Promise<void>;
}

/** Engines by name; the connection's `transport` column picks one. */
export class EngineRegistry {
  private readonly engines = new Map<string, Engine>();

  register(engine: Engine): void {
    this.engines.set(engine.name, engine);
  }

  get(name: string): Engine | undefined {
    return this.engines.get(name);
  }

  names(): string[] {
    return [...this.engines.keys()];
  }

  async open(): Promise<void> {
    for (const engine of this.engines.values()) await engine.open?.();
  }

  async close(): Promise<void> {
    await Promise.all([...this.engines.values()].map((e) => e.close?.()));
  }
}
