// Groups of a connection's number (docs/groups.md). Bodies are `.strict()`. A group is
// addressed by its network id (e.g. `120363000000000001@g.us`), the same id a send names in
// `to: {group}` and an inbound group message carries.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionParams, ConnectionRef, NoBody, Timestamp, chars, page, problems, queryInteger, type RouteMetadata } from "./common.js";

const c = initContract();

/** Subject of a group: 1-100 characters. */
export const GROUP_SUBJECT_MAX = 100;
/** Description of a group: 0-2048 characters. */
export const GROUP_DESCRIPTION_MAX = 2048;
/** Participants named in one request: 1-256. */
export const GROUP_PARTICIPANTS_MAX = 256;

const Phone = chars(5, 40);
const GroupId = chars(1, 64).describe("The group's network id, e.g. `120363000000000001@g.us`");

export const GroupParams = z.object({ connection: ConnectionRef, group: GroupId });
export type GroupParams = z.infer<typeof GroupParams>;

export const ListGroupsQuery = z.object({ limit: queryInteger(1, 100).default(25), cursor: chars(0, 200).optional() }).strict();
export type ListGroupsQuery = z.infer<typeof ListGroupsQuery>;

export const GROUP_ROLES = ["member", "admin", "superadmin"] as const;
export const GroupRole = z.enum(GROUP_ROLES).describe("`superadmin` is the group's creator");
export type GroupRole = z.infer<typeof GroupRole>;

export const GroupSummary = z.object({
  id: z.string().describe("The group's network id"),
  object: z.literal("group"),
  subject: z.string(),
  size: z.number().int().describe("How many participants the group has"),
  own_role: GroupRole.nullable().describe("The linked number's role; null once it left"),
  created_at: Timestamp,
});
export type GroupSummary = z.infer<typeof GroupSummary>;

export const GroupParticipant = z.object({
  phone: z.string().nullable().describe("The participant's number, when the network shows it"),
  lid: z.string().nullable().describe("The participant's network identifier (LID), when the network gives one"),
  role: GroupRole,
});
export type GroupParticipant = z.infer<typeof GroupParticipant>;

export const Group = GroupSummary.extend({
  description: z.string().nullable(),
  announce: z.boolean().describe("Only admins may post"),
  locked: z.boolean().describe("Only admins may change the subject, description and settings"),
  participants: z.array(GroupParticipant),
});
export type Group = z.infer<typeof Group>;

export const GroupList = page(GroupSummary);
export type GroupList = z.infer<typeof GroupList>;

export const PARTICIPANT_OUTCOMES = [
  "added",
  "already_member",
  "not_on_network",
  "invited",
  "refused",
  "removed",
  "promoted",
  "demoted",
  "not_member",
] as const;
export const ParticipantOutcomeCode = z
  .enum(PARTICIPANT_OUTCOMES)
  .describe(
    "added; already_member; not_on_network; invited (their privacy settings refuse being added: the network sent them an invitation instead); refused (the network refused, e.g. they left recently); removed, promoted, demoted; not_member (remove, promote or demote of someone not in the group)",
  );
export type ParticipantOutcomeCode = z.infer<typeof ParticipantOutcomeCode>;

export const ParticipantOutcome = z.object({ phone: z.string(), outcome: ParticipantOutcomeCode });
export type ParticipantOutcome = z.infer<typeof ParticipantOutcome>;

export const ParticipantOutcomes = z.object({ data: z.array(ParticipantOutcome) });
export type ParticipantOutcomes = z.infer<typeof ParticipantOutcomes>;

const Participants = z.array(Phone).min(1).max(GROUP_PARTICIPANTS_MAX);

export const CreateGroupBody = z.object({ subject: chars(1, GROUP_SUBJECT_MAX), participants: Participants }).strict();
export type CreateGroupBody = z.infer<typeof CreateGroupBody>;

export const GroupCreated = Group.extend({ outcomes: z.array(ParticipantOutcome).describe("What happened to each participant named") });
export type GroupCreated = z.infer<typeof GroupCreated>;

export const UpdateGroupBody = z
  .object({
    subject: chars(1, GROUP_SUBJECT_MAX).optional(),
    description: chars(0, GROUP_DESCRIPTION_MAX).optional().describe("An empty string removes the description"),
    announce: z.boolean().optional(),
    locked: z.boolean().optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: "name at least one of subject, description, announce, locked" });
export type UpdateGroupBody = z.infer<typeof UpdateGroupBody>;

export const PARTICIPANT_ACTIONS = ["add", "remove", "promote", "demote"] as const;
export const ParticipantAction = z.enum(PARTICIPANT_ACTIONS);
export type ParticipantAction = z.infer<typeof ParticipantAction>;

export const ParticipantsBody = z.object({ action: ParticipantAction, participants: Participants }).strict();
export type ParticipantsBody = z.infer<typeof ParticipantsBody>;

export const GroupInvite = z.object({
  group: z.string(),
  code: z.string().describe("The invite code; whoever has it may join"),
  link: z.string().describe("The invite link, `https://chat.whatsapp.com/<code>`"),
});
export type GroupInvite = z.infer<typeof GroupInvite>;

/** `data` of `group.updated`: the group after the change, and which of its fields changed. */
export const GroupUpdatedData = z.object({
  group: Group,
  changed: z.array(z.enum(["subject", "description", "announce", "locked"])),
});
export type GroupUpdatedData = z.infer<typeof GroupUpdatedData>;

export const GroupParticipantChange = z.object({
  phone: z.string().nullable(),
  lid: z.string().nullable(),
  change: z.enum(["joined", "left", "promoted", "demoted"]),
});
export type GroupParticipantChange = z.infer<typeof GroupParticipantChange>;

/** `data` of `group.participants`: who joined, left, was promoted or demoted. */
export const GroupParticipantsData = z.object({ group: GroupSummary, changes: z.array(GroupParticipantChange) });
export type GroupParticipantsData = z.infer<typeof GroupParticipantsData>;

const read = { security: { auth: "key_or_session", scope: "connections:read" }, tag: "Groups" } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "connections:write" }, tag: "Groups" } satisfies RouteMetadata;
const CONNECTED = "409 `connection_not_ready` unless the connection is connected.";
const UNKNOWN = "404 when the number is not in the group.";
const ADMIN = "403 `not_group_admin` when the network requires the linked number to be a group admin.";

export const groups = c.router(
  {
    list: {
      method: "GET",
      path: "/v1/connections/:connection/groups",
      summary: "List the groups the number is in (extension)",
      description: `Newest first, cursor-paginated. ${CONNECTED}`,
      pathParams: ConnectionParams,
      query: ListGroupsQuery,
      responses: { 200: GroupList, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: read,
    },
    get: {
      method: "GET",
      path: "/v1/connections/:connection/groups/:group",
      summary: "Retrieve a group with its participants (extension)",
      description: `${UNKNOWN} ${CONNECTED}`,
      pathParams: GroupParams,
      responses: { 200: Group, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: read,
    },
    create: {
      method: "POST",
      path: "/v1/connections/:connection/groups",
      summary: "Create a group (extension)",
      description: `The linked number becomes its superadmin; each participant named gets an outcome. ${CONNECTED}`,
      pathParams: ConnectionParams,
      body: CreateGroupBody,
      responses: { 201: GroupCreated, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
    update: {
      method: "PATCH",
      path: "/v1/connections/:connection/groups/:group",
      summary: "Change a group's subject, description or settings (extension)",
      description: `${UNKNOWN} ${ADMIN} ${CONNECTED}`,
      pathParams: GroupParams,
      body: UpdateGroupBody,
      responses: { 200: Group, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
    participants: {
      method: "POST",
      path: "/v1/connections/:connection/groups/:group/participants",
      summary: "Add, remove, promote or demote participants (extension)",
      description: `An outcome per participant named. ${UNKNOWN} ${ADMIN} ${CONNECTED}`,
      pathParams: GroupParams,
      body: ParticipantsBody,
      responses: { 200: ParticipantOutcomes, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
    leave: {
      method: "POST",
      path: "/v1/connections/:connection/groups/:group/leave",
      summary: "Leave a group (extension)",
      description: `${UNKNOWN} ${CONNECTED}`,
      pathParams: GroupParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
    invite: {
      method: "GET",
      path: "/v1/connections/:connection/groups/:group/invite",
      summary: "The group's invite link (extension)",
      description: `Treat the link as a credential: whoever has it may join. ${UNKNOWN} ${ADMIN} ${CONNECTED}`,
      pathParams: GroupParams,
      responses: { 200: GroupInvite, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
    revokeInvite: {
      method: "POST",
      path: "/v1/connections/:connection/groups/:group/invite",
      summary: "Revoke the invite link and issue a new one (extension)",
      description: `The previous link stops working. ${UNKNOWN} ${ADMIN} ${CONNECTED}`,
      pathParams: GroupParams,
      body: c.noBody(),
      responses: { 200: GroupInvite, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
  },
  { strictStatusCodes: true },
);
