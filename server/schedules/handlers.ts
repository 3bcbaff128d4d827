import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import { scheduleView, type ScheduleService } from "./service.js";

const s = initServer();

export function schedulesRouter(schedules: ScheduleService) {
  return s.router(contract.schedules, {
    create: async ({ body, res }) => {
      return { status: 201, body: scheduleView(await schedules.create(principalOf(res), body)) };
    },
    preview: async ({ body, res }) => {
      // Like its siblings, for a member of a workspace (the answer itself depends on nothing of it).
      principalOf(res);
      return { status: 200, body: schedules.preview(body) };
    },
    list: async ({ query, res }) => {
      return { status: 200, body: { data: (await schedules.list(principalOf(res).workspaceId, query.status)).map(scheduleView) } };
    },
    get: async ({ params, res }) => {
      return { status: 200, body: scheduleView(await schedules.get(principalOf(res).workspaceId, params.id)) };
    },
    pause: async ({ params, res }) => {
      return { status: 200, body: scheduleView(await schedules.pause(principalOf(res).workspaceId, params.id)) };
    },
    resume: async ({ params, res }) => {
      return { status: 200, body: scheduleView(await schedules.resume(principalOf(res).workspaceId, params.id)) };
    },
    cancel: async ({ params, res }) => {
      return { status: 200, body: scheduleView(await schedules.cancel(principalOf(res).workspaceId, params.id)) };
    },
  });
}
