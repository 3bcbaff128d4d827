// Members and invitations (docs/decisions.md, "Identity"; permissions from contract/permissions.ts). Bodies are `.strict()`:
// unknown fields are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { EmailAddress, IdParams, NoBody, Role, Timestamp, problems, type RouteMetadata, chars } from "./common.js";

const c = initContract();

export const InviteMemberBody = z.object({ email: EmailAddress.max(254), role: Role }).strict();
export type InviteMemberBody = z.infer<typeof InviteMemberBody>;

export const AcceptInvitationBody = z.object({ token: chars(20, 200) }).strict();
export type AcceptInvitationBody = z.infer<typeof AcceptInvitationBody>;

export const UpdateMemberBody = z.object({ role: Role }).strict();
export type UpdateMemberBody = z.infer<typeof UpdateMemberBody>;

export const Member = z.object({
  id: z.string().describe("Membership id (the path id of PATCH/DELETE /v1/members/{id})"),
  user_id: z.string(),
  email: z.string(),
  role: Role,
  joined_at: Timestamp,
});
export type Member = z.infer<typeof Member>;

// The token never appears: it travels only in the e-mailed link.
export const Invitation = z.object({
  id: z.string(),
  email: z.string(),
  role: Role,
  invited_by: z.string().describe("User id of the inviting member"),
  created_at: Timestamp,
  expires_at: Timestamp,
});
export type Invitation = z.infer<typeof Invitation>;

export const MemberList = z.object({
  members: z.array(Member),
  invitations: z.array(Invitation).describe("Pending invitations"),
  assignable_roles: z.array(Role).describe("Roles the caller may invite to or assign"),
});
export type MemberList = z.infer<typeof MemberList>;

export const InvitationAccepted = z.object({ workspace: z.object({ id: z.string(), name: z.string() }), role: Role });
export type InvitationAccepted = z.infer<typeof InvitationAccepted>;

const session = { security: { auth: "session" }, tag: "Team" } satisfies RouteMetadata;

export const team = c.router(
  {
    list: {
      method: "GET",
      path: "/v1/members",
      summary: "List members and pending invitations",
      responses: { 200: MemberList, ...problems(401, 429) },
      metadata: session,
    },
    invite: {
      method: "POST",
      path: "/v1/members/invitations",
      summary: "Invite a member",
      description:
        "E-mails a single-use link bound to the address. 403 when the role is above the caller's, 409 when already a member.",
      body: InviteMemberBody,
      responses: { 201: Invitation, ...problems(400, 401, 402, 403, 409, 429) },
      metadata: { ...session, feature: "member_management" } satisfies RouteMetadata,
    },
    cancelInvitation: {
      method: "DELETE",
      path: "/v1/members/invitations/:id",
      summary: "Withdraw a pending invitation",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 429) },
      metadata: session,
    },
    accept: {
      method: "POST",
      path: "/v1/members/accept",
      summary: "Accept an invitation",
      description:
        "Needs a session signed in as the invited address: 401 when not signed in as it, 403 when the invitation is for another address, 404 when invalid.",
      body: AcceptInvitationBody,
      responses: { 200: InvitationAccepted, ...problems(400, 401, 403, 404, 429) },
      metadata: session,
    },
    update: {
      method: "PATCH",
      path: "/v1/members/:id",
      summary: "Change a member's role",
      description: "403 when the caller cannot assign or act on that role; 409 when the workspace would lose its last owner.",
      pathParams: IdParams,
      body: UpdateMemberBody,
      responses: { 200: Member, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: session,
    },
    remove: {
      method: "DELETE",
      path: "/v1/members/:id",
      summary: "Remove a member",
      description: "The member's API keys stop working at once. 409 when the workspace would lose its last owner.",
      pathParams: IdParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: session,
    },
  },
  { strictStatusCodes: true },
);
