// Bodies of the sandbox control API (/sandbox/v1). Not part of the public contract: the sandbox
// exists only outside production, for development and tests. Strict like every body we accept.
import { z } from "zod";
import { hasContent, Location, Media, ZonedDateTime } from "../../../contract/index.js";

const Phone = z.string().min(5).max(40);

export const ScanBody = z.object({ payload: z.string().min(1).max(500), phone: Phone }).strict();
export type ScanBody = z.infer<typeof ScanBody>;

/** The phone types the pairing code shown for its number (ABCD-EFGH; the dash is optional). */
export const EnterCodeBody = z.object({ code: z.string().regex(/^[0-9A-Za-z]{4}-?[0-9A-Za-z]{4}$/, "must be 8 letters and digits, as ABCD-EFGH"), phone: Phone }).strict();
export type EnterCodeBody = z.infer<typeof EnterCodeBody>;

export const Receipts = z.enum(["read", "delivered", "none"]);

/** Declares (or re-declares) a contact; omitted fields take the undeclared defaults. */
export const NumberBody = z
  .object({
    phone: Phone,
    on_network: z.boolean().default(true),
    receipts: Receipts.default("read"),
    group_add: z.enum(["allow", "invite", "refuse"]).default("allow").describe("How the contact answers being added to a group: their privacy setting"),
  })
  .strict();
export type NumberBody = z.infer<typeof NumberBody>;

export const InboundBody = z
  .object({
    to: Phone.describe("The linked number the message arrives on"),
    from: Phone,
    from_lid: Phone.optional().describe("The sender's LID (`lid:<digits>`) beside their number, as the network names a group participant it knows by both"),
    body: z.string().max(4096).optional(),
    media: Media.optional(),
    location: Location.optional(),
    group: Phone.optional().describe("The group the message was posted in"),
  })
  .strict()
  .refine(hasContent, {
    message: "an inbound message needs a body (1-4096 characters), media or location",
  });
export type InboundBody = z.infer<typeof InboundBody>;

/** The person holding the linked phone `from` writes to `to` (or in `group`) from the phone itself. */
export const PhoneSendBody = z
  .object({
    from: Phone.describe("The linked number the message is written on"),
    to: Phone.optional(),
    group: Phone.optional(),
    body: z.string().max(4096).optional(),
    media: Media.optional(),
    location: Location.optional(),
  })
  .strict()
  .refine((b) => (b.to === undefined) !== (b.group === undefined), { message: "a phone-send needs exactly one of to or group" })
  .refine(hasContent, {
    message: "a phone-send needs a body (1-4096 characters), media or location",
  });
export type PhoneSendBody = z.infer<typeof PhoneSendBody>;

export const LogoutBody = z.object({ phone: Phone }).strict();

/** The network restricts the account of a linked number (`active`, until a time or until lifted), or lifts it. */
export const RestrictBody = z
  .object({
    phone: Phone,
    active: z.boolean().default(true),
    until: ZonedDateTime.optional().describe("When the restriction ends by itself; absent: until lifted"),
  })
  .strict();
export type RestrictBody = z.infer<typeof RestrictBody>;

// A contact acting on a message (docs/conversations.md): `to` is the linked number, `from`
// the contact, `message_id` our id of the message acted on.
const Acting = { from: Phone, to: Phone.describe("The linked number"), message_id: z.string().min(1).max(64) };

export const ReactBody = z.object({ ...Acting, emoji: z.string().max(32).describe('"" removes the reaction') }).strict();
export type ReactBody = z.infer<typeof ReactBody>;

export const ContactEditBody = z.object({ ...Acting, body: z.string().min(1).max(4096) }).strict();
export type ContactEditBody = z.infer<typeof ContactEditBody>;

export const ContactRevokeBody = z.object(Acting).strict();
export type ContactRevokeBody = z.infer<typeof ContactRevokeBody>;

export const VoteBody = z.object({ ...Acting, options: z.array(z.string().min(1).max(100)).max(12) }).strict();
export type VoteBody = z.infer<typeof VoteBody>;

export const TypingBody = z
  .object({ from: Phone, to: Phone, state: z.enum(["typing", "recording", "paused"]), group: Phone.optional().describe("The group it happens in") })
  .strict();
export type TypingBody = z.infer<typeof TypingBody>;

export const ReceivedQuery = z.object({ to: Phone }).strict();

/** Absent fields keep their value; `{}` changes nothing and answers the current faults. */
export const FaultsBody = z
  .object({
    fail_next_sends: z.number().int().min(0).max(1_000_000).optional(),
    latency_ms: z.number().int().min(0).max(60_000).optional(),
    duplicate_callbacks: z.boolean().optional(),
  })
  .strict();
export type FaultsBody = z.infer<typeof FaultsBody>;

export interface Faults {
  fail_next_sends: number;
  latency_ms: number;
  duplicate_callbacks: boolean;
}

const GroupRole = z.enum(["member", "admin", "superadmin"]);

/** A group the linked number `phone` is in (with `role`), and its other members. */
export const GroupBody = z
  .object({
    phone: Phone.describe("The linked number"),
    role: GroupRole.default("member"),
    subject: z.string().min(1).max(100),
    description: z.string().max(2048).optional(),
    announce: z.boolean().default(false),
    locked: z.boolean().default(false),
    members: z.array(z.object({ phone: Phone, role: GroupRole.default("member") }).strict()).max(1024).default([]),
  })
  .strict();
export type GroupBody = z.infer<typeof GroupBody>;

/** Others join or leave a group, or are promoted or demoted by someone else. */
export const GroupMembersBody = z.object({ action: z.enum(["join", "leave", "promote", "demote"]), phones: z.array(Phone).min(1).max(1024) }).strict();
export type GroupMembersBody = z.infer<typeof GroupMembersBody>;

/** Someone in the group changes its subject, description or settings. */
export const GroupChangeBody = z
  .object({ subject: z.string().min(1).max(100).optional(), description: z.string().max(2048).optional(), announce: z.boolean().optional(), locked: z.boolean().optional() })
  .strict();
export type GroupChangeBody = z.infer<typeof GroupChangeBody>;
