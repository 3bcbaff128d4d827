// Chats (docs/conversations.md): the other side of a conversation on one connection, a
// contact (`+15550002222`, `lid:<digits>`) or a group (`group:<id>`). The rule that derives a
// message's chat is the `chat` column of messages (migration 1732251000000-conversations.ts);
// these turn a chat into the recipient the engines address, and a message into its reference.
import type { Recipient } from "../../contract/index.js";
import type { MessageRef } from "../engines/engine.js";
import type { Message } from "./entities.js";

const GROUP = "group:";

/** The recipient an engine addresses for a chat. */
export function chatRecipient(chat: string): Recipient {
  return chat.startsWith(GROUP) ? { group: chat.slice(GROUP.length) } : chat;
}

/** The chat of a message (the same rule as the `chat` column). */
export function chatOf(message: Pick<Message, "direction" | "recipient" | "sender">): string {
  const r = message.recipient;
  if (typeof r === "object" && "group" in r) return GROUP + r.group;
  if (message.direction === "inbound") return message.sender ?? "";
  return typeof r === "string" ? r : r.phone;
}

/** How an engine addresses a message it carried; null while the network has not given it an id. */
export function messageRef(message: Pick<Message, "id" | "direction" | "recipient" | "sender" | "providerMessageId">): MessageRef | null {
  if (!message.providerMessageId) return null;
  const outbound = message.direction === "outbound";
  return {
    messageId: message.id,
    providerMessageId: message.providerMessageId,
    chat: chatRecipient(chatOf(message)),
    fromMe: outbound,
    sender: outbound ? null : message.sender,
  };
}
