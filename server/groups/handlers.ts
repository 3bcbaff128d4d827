import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import type { GroupService } from "./service.js";

const s = initServer();

export function groupsRouter(groups: GroupService) {
  return s.router(contract.groups, {
    list: async ({ params, query, res }) => ({ status: 200, body: await groups.list(principalOf(res), params.connection, query) }),
    get: async ({ params, res }) => ({ status: 200, body: await groups.get(principalOf(res), params.connection, params.group) }),
    create: async ({ params, body, res }) => ({ status: 201, body: await groups.create(principalOf(res), params.connection, body) }),
    update: async ({ params, body, res }) => ({ status: 200, body: await groups.update(principalOf(res), params.connection, params.group, body) }),
    participants: async ({ params, body, res }) => ({
      status: 200,
      body: { data: await groups.participants(principalOf(res), params.connection, params.group, body) },
    }),
    leave: async ({ params, res }) => {
      await groups.leave(principalOf(res), params.connection, params.group);
      return { status: 204, body: undefined };
    },
    invite: async ({ params, res }) => {
      res.setHeader("Cache-Control", "no-store");
      return { status: 200, body: await groups.invite(principalOf(res), params.connection, params.group, false) };
    },
    revokeInvite: async ({ params, res }) => {
      res.setHeader("Cache-Control", "no-store");
      return { status: 200, body: await groups.invite(principalOf(res), params.connection, params.group, true) };
    },
  });
}
