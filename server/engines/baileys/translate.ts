// Translations between our messages and the library's shapes: recipients to JIDs, our message to
// message content, the network's messages and receipts to our reports. No I/O here.
import type { AnyMessageContent, WAMessage, WAMessageKey, proto } from "@whiskeysockets/baileys";
import type { Location, Media, MediaKind, Recipient } from "../../../contract/index.js";
import { hmac } from "../../secrets.js";

const USER_SERVER = "s.whatsapp.net";
const LID_SERVER = "lid";
const GROUP_SERVER = "g.us";

/**
 * The network message id of our message: derived from our id (an HMAC under SECRET_KEY, in the
 * library's own id format), so a hand-off repeated after a crash writes the same message again,
 * which the network and the recipient's devices treat as one.
 */
export function networkMessageId(secretKey: Buffer, messageId: string): string {
  return "3EB0" + hmac(secretKey, `baileys-message-id:${messageId}`).toString("hex").toUpperCase().slice(0, 18);
}

/** The address prefix of a contact known only by its LID: `lid:<digits>`, a valid `to`. */
const LID_ADDRESS = "lid:";

/**
 * The JID a recipient is addressed at: a group's, a LID's (`lid:<digits>`, or the network's own
 * `<digits>@lid`), or a phone number's user JID. A LID is never turned into a phone-number JID:
 * its digits are not a phone number, and `<lid digits>@s.whatsapp.net` is a stranger.
 */
export function recipientJid(to: Recipient): string {
  if (typeof to === "object" && "group" in to) return to.group.includes("@") ? to.group : `${to.group}@${GROUP_SERVER}`;
  const address = (typeof to === "string" ? to : to.phone).trim();
  const lid = lidAddressDigits(address);
  if (lid) return `${lid}@${LID_SERVER}`;
  return `${address.replace(/\D/g, "")}@${USER_SERVER}`;
}

/** The LID digits of an address `lid:<digits>` or `<digits>@lid`; null for a phone number. */
export function lidAddressDigits(address: string): string | null {
  const lower = address.toLowerCase();
  if (lower.startsWith(LID_ADDRESS)) return /^\d{1,30}$/.test(lower.slice(LID_ADDRESS.length)) ? lower.slice(LID_ADDRESS.length) : null;
  const parts = splitJid(lower);
  return parts && parts.server === LID_SERVER && /^\d{1,30}$/.test(parts.user) ? parts.user : null;
}

/** The address we report a LID by (`lid:<digits>`), from its JID or bare form; null for any other kind. */
export function lidAddress(jid: string | null | undefined): string | null {
  const lid = lidOfJid(jid);
  return lid ? `${LID_ADDRESS}${lid.slice(0, lid.indexOf("@"))}` : null;
}

/** The address of a recipient as the network reports it back (phone digits or the group id). */
export function phoneJid(phone: string): string {
  return `${phone.replace(/\D/g, "")}@${USER_SERVER}`;
}

function splitJid(jid: string): { user: string; server: string } | null {
  const at = jid.indexOf("@");
  if (at < 1) return null;
  // "15550001111:12@s.whatsapp.net" (a device) and "15550001111_1@…" (an agent) share the user.
  return { user: jid.slice(0, at).split(":")[0]!.split("_")[0]!, server: jid.slice(at + 1) };
}

/** "+15550001111" for a phone-number JID; null for any other kind (LID, group, broadcast). */
export function phoneOfJid(jid: string | null | undefined): string | null {
  const parts = jid ? splitJid(jid) : null;
  return parts && parts.server === USER_SERVER && /^\d{5,20}$/.test(parts.user) ? `+${parts.user}` : null;
}

/** The bare LID ("12345@lid") of a LID JID; null for any other kind. */
export function lidOfJid(jid: string | null | undefined): string | null {
  const parts = jid ? splitJid(jid) : null;
  return parts && parts.server === LID_SERVER ? `${parts.user}@${LID_SERVER}` : null;
}

/**
 * Addresses that are not conversations with a contact: channels (`…@newsletter`) and status and
 * broadcast lists (`…@broadcast`). The library is told to ignore them (`shouldIgnoreJid`) and an
 * upsert from one is never an inbound message.
 */
export function isIgnoredJid(jid: string | null | undefined): boolean {
  return Boolean(jid && (jid.endsWith("@newsletter") || jid.endsWith("@broadcast")));
}

export function isGroupJid(jid: string | null | undefined): boolean {
  return Boolean(jid?.endsWith(`@${GROUP_SERVER}`));
}

/** Every LID ↔ phone pair a message key carries (v7 puts the other form in the *Alt fields). */
export function lidPairs(key: WAMessageKey): { lid: string; phone: string }[] {
  const pairs: { lid: string; phone: string }[] = [];
  for (const [a, b] of [
    [key.remoteJid, key.remoteJidAlt],
    [key.participant, key.participantAlt],
  ] as const) {
    const lid = lidOfJid(a) ?? lidOfJid(b);
    const phone = phoneOfJid(a) ?? phoneOfJid(b);
    if (lid && phone) pairs.push({ lid, phone });
  }
  return pairs;
}

/** Message content for the library; `media` is the fetched file when the message has media. */
export function outboundContent(body: string | null, media: { spec: Media; data: Buffer; mimetype: string } | null, location: Location | null): AnyMessageContent {
  if (media) {
    const caption = body ?? undefined;
    const kind = media.spec.kind ?? kindOfMimetype(media.mimetype);
    switch (kind) {
      case "image":
        return { image: media.data, caption, mimetype: media.mimetype };
      case "video":
        return { video: media.data, caption, mimetype: media.mimetype };
      case "audio":
        return { audio: media.data, mimetype: media.mimetype, ...(isVoiceNote(media.mimetype) && { ptt: true }) };
      default:
        return { document: media.data, caption, mimetype: media.mimetype, fileName: documentName(media.spec, media.mimetype) };
    }
  }
  if (location) return { location: { degreesLatitude: location.latitude, degreesLongitude: location.longitude, ...(location.title && { name: location.title }) } };
  return { text: body ?? "" };
}

/**
 * Audio in the network's voice-note format (Opus in Ogg) goes as a voice note (played inline with
 * a waveform, like one recorded on a phone); any other audio as an audio file. The API has no
 * field for it: the format says it (docs/decisions.md, "Voice notes").
 */
export function isVoiceNote(mimetype: string): boolean {
  const [type, ...params] = mimetype.toLowerCase().split(";").map((p) => p.trim());
  return type === "audio/opus" || (type === "audio/ogg" && params.some((p) => p.replace(/["\s]/g, "") === "codecs=opus"));
}

/** Extensions of document types whose subtype is not one. */
const EXTENSIONS: Record<string, string> = {
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "application/msword": "doc",
  "application/vnd.ms-excel": "xls",
  "text/plain": "txt",
  "application/octet-stream": "",
};

/**
 * The name a document is shown with: the one given, else the URL's last path segment, with an
 * extension from the mimetype when it has none (a recipient's phone opens a document by it).
 */
export function documentName(media: Media, mimetype: string): string {
  if (media.filename) return media.filename;
  let last = "";
  try {
    last = decodeURIComponent(new URL(media.url).pathname.split("/").pop() ?? "").replace(/[\\/\0]/g, "");
  } catch {
    // an undecodable path: no name from it
  }
  if (/\.[A-Za-z0-9]{1,8}$/.test(last)) return last.slice(-255);
  const subtype = mimetype.split(";")[0]!.trim().toLowerCase();
  const ext = EXTENSIONS[subtype] ?? (/^[a-z0-9]{1,8}$/.test(subtype.split("/")[1] ?? "") ? subtype.split("/")[1]! : "");
  return `${(last || "file").slice(0, 240)}${ext ? `.${ext}` : ""}`;
}

export function kindOfMimetype(mimetype: string): MediaKind {
  const top = mimetype.split("/")[0];
  return top === "image" || top === "video" || top === "audio" ? top : "document";
}

/** What a network message says, in our terms; null for what we do not record (reactions, protocol messages…). */
export interface Content {
  body?: string;
  media?: Media;
  location?: Location;
}

export function messageContent(message: proto.IMessage | null | undefined): Content | null {
  if (!message) return null;
  // Disappearing, view-once (each generation of it), captioned-document, associated child (an
  // album's items) and group-mention messages wrap the real one. Edits (editedMessage) are not
  // new messages and are not unwrapped.
  const inner =
    message.ephemeralMessage?.message ??
    message.viewOnceMessage?.message ??
    message.viewOnceMessageV2?.message ??
    message.viewOnceMessageV2Extension?.message ??
    message.documentWithCaptionMessage?.message ??
    message.associatedChildMessage?.message ??
    message.groupMentionedMessage?.message ??
    message.lottieStickerMessage?.message;
  if (inner) return messageContent(inner);
  // A reply chosen from buttons or a list is recorded as the text the person saw and chose, else
  // (a client that sent no text) as the id of what they chose: never dropped.
  const text =
    message.conversation ||
    message.extendedTextMessage?.text ||
    message.buttonsResponseMessage?.selectedDisplayText ||
    message.buttonsResponseMessage?.selectedButtonId ||
    message.templateButtonReplyMessage?.selectedDisplayText ||
    message.templateButtonReplyMessage?.selectedId ||
    message.listResponseMessage?.title ||
    message.listResponseMessage?.singleSelectReply?.selectedRowId ||
    message.interactiveResponseMessage?.body?.text ||
    message.interactiveResponseMessage?.nativeFlowResponseMessage?.paramsJson;
  if (text) return { body: text.slice(0, 4096) };
  // A shared contact (or several) is recorded as its vCard text.
  const contacts = message.contactMessage ? [message.contactMessage] : (message.contactsArrayMessage?.contacts ?? []);
  const cards = contacts.map((c) => c.vcard || c.displayName).filter((c): c is string => Boolean(c));
  if (cards.length) return { body: cards.join("\n").slice(0, 4096) };
  const loc = message.locationMessage ?? message.liveLocationMessage;
  if (loc && typeof loc.degreesLatitude === "number" && typeof loc.degreesLongitude === "number") {
    const title = (message.locationMessage?.name ?? message.locationMessage?.address ?? undefined) || undefined;
    return { location: { latitude: loc.degreesLatitude, longitude: loc.degreesLongitude, ...(title && { title: title.slice(0, 255) }) } };
  }
  const media: [MediaKind, proto.Message.IImageMessage | proto.Message.IVideoMessage | proto.Message.IAudioMessage | proto.Message.IDocumentMessage | null | undefined][] = [
    ["image", message.imageMessage],
    ["video", message.videoMessage],
    // A video note is a video; a sticker an image (webp).
    ["video", message.ptvMessage],
    ["image", message.stickerMessage],
    ["audio", message.audioMessage],
    ["document", message.documentMessage],
  ];
  for (const [kind, m] of media) {
    if (!m) continue;
    const caption = "caption" in m && m.caption ? m.caption.slice(0, 4096) : undefined;
    const filename = "fileName" in m && m.fileName ? m.fileName.slice(0, 255) : undefined;
    const url = m.url && /^https:\/\//.test(m.url) ? m.url.slice(0, 2048) : "https://mmg.whatsapp.net/unavailable";
    return {
      ...(caption && { body: caption }),
      media: { url, kind, ...(m.mimetype && m.mimetype.length >= 3 && { mimetype: m.mimetype.slice(0, 255) }), ...(filename && { filename }) },
    };
  }
  return null;
}

/** The network's per-message status codes (proto.WebMessageInfo.Status) in our statuses. */
export function statusOfCode(code: number | null | undefined): "sent" | "delivered" | "read" | "failed" | null {
  switch (code) {
    case 0:
      return "failed";
    case 2:
      return "sent";
    case 3:
      return "delivered";
    case 4:
    case 5:
      return "read";
    default:
      return null;
  }
}

/** The timestamp of a network message (seconds, possibly a Long) as a Date. */
export function messageTime(msg: Pick<WAMessage, "messageTimestamp">): Date {
  const t = msg.messageTimestamp;
  const seconds = typeof t === "number" ? t : t ? Number(t.toString()) : 0;
  return seconds > 0 ? new Date(seconds * 1000) : new Date();
}
