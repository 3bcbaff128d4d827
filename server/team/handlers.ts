import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { sessionOf, signedInUserOf } from "../http/principal.js";
import { invitationView, type TeamService } from "./service.js";

const s = initServer();

export function teamRouter(team: TeamService) {
  return s.router(contract.team, {
    list: async ({ res }) => {
      const { members, invitations, assignableRoles } = await team.list(sessionOf(res));
      return { status: 200, body: { members, invitations: invitations.map(invitationView), assignable_roles: assignableRoles } };
    },
    invite: async ({ body, res }) => {
      return { status: 201, body: invitationView(await team.invite(sessionOf(res), body.email, body.role)) };
    },
    cancelInvitation: async ({ params, res }) => {
      await team.revokeInvitation(sessionOf(res), params.id);
      return { status: 204, body: undefined };
    },
    accept: async ({ body, res }) => {
      const { workspace, role } = await team.accept(signedInUserOf(res), body.token);
      return { status: 200, body: { workspace: { id: workspace.id, name: workspace.name }, role } };
    },
    update: async ({ params, body, res }) => {
      return { status: 200, body: await team.changeRole(sessionOf(res), params.id, body.role) };
    },
    remove: async ({ params, res }) => {
      await team.remove(sessionOf(res), params.id);
      return { status: 204, body: undefined };
    },
  });
}
