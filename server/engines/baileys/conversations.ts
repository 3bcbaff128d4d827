// Conversations on the real network (docs/conversations.md): our actions as the library's
// message content (a quote, a reaction, an edit, a delete for everyone, a poll), reads and
// presence as its calls, and what the network reports of a chat (a contact's reaction, edit,
// revoke, poll vote, typing) as our reports. No I/O here but the poll vote's decryption.
import { createHash } from "node:crypto";
import { decryptPollVote, type AnyMessageContent, type WAMessage, type WAMessageKey, type WAPresence, type proto } from "@whiskeysockets/baileys";
import type { PresenceState, Recipient } from "../../../contract/index.js";
import type { MessageRef, OutboundPoll } from "../engine.js";
import { recipientJid } from "./translate.js";

/** The JID of a chat: a group's, a contact's by number, or by LID (`lid:<digits>`). */
export function chatJid(chat: Recipient): string {
  if (typeof chat === "string" && chat.startsWith("lid:")) return `${chat.slice(4).replace(/\D/g, "")}@lid`;
  // A JID already (an unmapped LID as the engine reports it).
  if (typeof chat === "string" && chat.includes("@")) return chat;
  return recipientJid(chat);
}

/** The library's key of a message we address by reference. */
export function messageKey(target: MessageRef): WAMessageKey {
  const remoteJid = chatJid(target.chat);
  const inGroup = typeof target.chat === "object" && "group" in target.chat;
  return {
    remoteJid,
    fromMe: target.fromMe,
    id: target.providerMessageId,
    ...(inGroup && !target.fromMe && target.sender && { participant: chatJid(target.sender) }),
  };
}

/** The message a reply quotes, as the library takes it (`options.quoted`): its key and what is known of its content. */
export function quotedMessage(target: MessageRef, stored: proto.IMessage | undefined): WAMessage {
  return { key: messageKey(target), message: stored ?? { conversation: "" } };
}

export function reactionContent(target: MessageRef, emoji: string): AnyMessageContent {
  return { react: { text: emoji, key: messageKey(target) } };
}

export function editContent(target: MessageRef, body: string): AnyMessageContent {
  return { text: body, edit: messageKey(target) };
}

export function revokeContent(target: MessageRef): AnyMessageContent {
  return { delete: messageKey(target) };
}

export function pollContent(poll: OutboundPoll): AnyMessageContent {
  return { poll: { name: poll.question, values: poll.options, selectableCount: poll.selectable } };
}

const PRESENCE: Record<PresenceState, WAPresence> = { typing: "composing", recording: "recording", paused: "paused" };

export function libraryPresence(state: PresenceState): WAPresence {
  return PRESENCE[state];
}

/** A contact's presence in our terms; null for what is not typing, recording or pausing (online, offline). */
export function presenceState(presence: WAPresence | undefined): PresenceState | null {
  switch (presence) {
    case "composing":
      return "typing";
    case "recording":
      return "recording";
    case "paused":
      return "paused";
    default:
      return null;
  }
}

/** What a contact did to a message, as the network says it: the message by its network id. */
export type ChatAction =
  | { type: "message.reaction"; provider_message_id: string; emoji: string }
  | { type: "message.edited"; provider_message_id: string; body: string }
  | { type: "message.revoked"; provider_message_id: string }
  | { type: "message.poll_vote"; provider_message_id: string; poll: { creatorJid: string; update: proto.Message.IPollUpdateMessage } };

// proto.Message.ProtocolMessage.Type: REVOKE = 0, MESSAGE_EDIT = 14.
const REVOKE = 0;
const MESSAGE_EDIT = 14;

/** The action a network message carries; null when it is a message of its own (or nothing we record). */
export function chatAction(message: proto.IMessage | null | undefined): ChatAction | null {
  if (!message) return null;
  const reaction = message.reactionMessage;
  if (reaction?.key?.id) return { type: "message.reaction", provider_message_id: reaction.key.id, emoji: (reaction.text ?? "").slice(0, 32) };
  const protocol = message.protocolMessage;
  if (protocol?.key?.id && protocol.type === REVOKE) return { type: "message.revoked", provider_message_id: protocol.key.id };
  if (protocol?.key?.id && protocol.type === MESSAGE_EDIT) {
    const edited = protocol.editedMessage;
    const body = edited?.conversation ?? edited?.extendedTextMessage?.text ?? edited?.imageMessage?.caption ?? "";
    return { type: "message.edited", provider_message_id: protocol.key.id, body: body.slice(0, 4096) };
  }
  const vote = message.pollUpdateMessage;
  if (vote?.pollCreationMessageKey?.id) {
    const key = vote.pollCreationMessageKey;
    return { type: "message.poll_vote", provider_message_id: key.id!, poll: { creatorJid: key.remoteJid ?? "", update: vote } };
  }
  return null;
}

/**
 * The names of the options a vote chose: the vote is decrypted with the poll's secret (kept, sealed,
 * with the poll we sent) and its option hashes (SHA-256 of each name) matched against the poll's.
 */
export function votedOptions(vote: proto.Message.IPollUpdateMessage, poll: { options: string[]; secret: Uint8Array; creatorJid: string; pollId: string; voterJid: string }): string[] {
  if (!vote.vote?.encPayload || !vote.vote.encIv) return [];
  const decrypted = decryptPollVote(vote.vote, { pollCreatorJid: poll.creatorJid, pollMsgId: poll.pollId, pollEncKey: poll.secret, voterJid: poll.voterJid });
  const chosen = new Set((decrypted.selectedOptions ?? []).map((h) => Buffer.from(h).toString("hex")));
  return poll.options.filter((name) => chosen.has(createHash("sha256").update(name).digest("hex")));
}
