// What the vendor is given of a conversation (docs/ai.md): the context a run sends with its
// system instruction, packed into the policy's byte budget.
import type { VendorRequest } from "../vendor.js";

export const REDACTED = "[redacted]";
/** What the model sees of a message without text. */
export const MEDIA_PLACEHOLDER = "[media]";
export const LOCATION_PLACEHOLDER = "[location]";

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** A conversation message as the context builder reads it. */
export interface ConversationMessage {
  direction: "inbound" | "outbound";
  body: string | null;
  hasMedia: boolean;
  hasLocation: boolean;
  contextSensitivity: string | null;
}

/**
 * The context (docs/ai.md): newest first, packed into `maxBytes` UTF-8 bytes together with the
 * system instruction, returned oldest first. Inbound → user, outbound → assistant; restricted
 * outbound messages never included, sensitive ones as `[redacted]`; a message without text as a
 * placeholder. Packing stops at the first message that does not fit (the context stays a
 * contiguous stretch of the conversation); when not even the newest fits, it is cut to what is left.
 */
export function buildContext(system: string, newestFirst: ConversationMessage[], maxBytes: number): VendorRequest["messages"] {
  let left = maxBytes - utf8Bytes(system);
  const packed: VendorRequest["messages"] = [];
  for (const m of newestFirst) {
    const content = contentOf(m);
    if (content === null) continue;
    const size = utf8Bytes(content);
    const role = m.direction === "inbound" ? "user" : "assistant";
    if (size <= left) {
      packed.push({ role, content });
      left -= size;
      continue;
    }
    if (!packed.length) packed.push({ role, content: cutUtf8(content, Math.max(0, left)) });
    break;
  }
  return packed.reverse();
}

function contentOf(m: ConversationMessage): string | null {
  if (m.direction === "outbound" && m.contextSensitivity === "restricted") return null;
  if (m.direction === "outbound" && m.contextSensitivity === "sensitive") return REDACTED;
  if (m.body) return m.body;
  if (m.hasMedia) return MEDIA_PLACEHOLDER;
  if (m.hasLocation) return LOCATION_PLACEHOLDER;
  return null;
}

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, never splitting a character. */
function cutUtf8(text: string, bytes: number): string {
  let out = "";
  let used = 0;
  for (const ch of text) {
    const n = utf8Bytes(ch);
    if (used + n > bytes) break;
    out += ch;
    used += n;
  }
  return out;
}
