// The read side of contract.messages (list, get, export, number check), spread into the messages
// router: `s.router(contract.messages, { ...readHandlers(reader), send, cancel, reschedule })`.
// The workspace always comes from the credential.
//
// Key order matters: ts-rest registers Express routes in the order of the router object's keys,
// so `export` (GET /v1/messages/export) must come before `get` (GET /v1/messages/:id), or
// "export" is read as a message id. Spread these first and do not reorder them.
import { finished } from "node:stream";
import type { AppRouteImplementation } from "@ts-rest/express";
import type { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import { exportFileName } from "./export.js";
import type { MessageReader } from "./reader.js";

type Routes = (typeof contract)["messages"];

export interface ReadHandlers {
  list: AppRouteImplementation<Routes["list"]>;
  export: AppRouteImplementation<Routes["export"]>;
  get: AppRouteImplementation<Routes["get"]>;
  checkNumber: AppRouteImplementation<Routes["checkNumber"]>;
}

export function readHandlers(reader: MessageReader): ReadHandlers {
  return {
    list: async ({ query, res }) => {
      return { status: 200, body: await reader.list(principalOf(res).workspaceId, query) };
    },

    export: async ({ query, req, res }) => {
      const csv = await reader.exportCsv(principalOf(res).workspaceId, query);
      res.setHeader("content-type", "text/csv; charset=utf-8");
      res.setHeader("content-disposition", `attachment; filename="${exportFileName()}"`);
      res.setHeader("cache-control", "no-store");
      // ts-rest sends a returned stream with `stream.pipe(res)`: backpressure, but no teardown.
      // So: when the response ends for any reason (the client went away), stop reading rows; when
      // reading fails half-way, cut the response so the client sees a broken download rather
      // than a CSV that merely looks complete.
      finished(res, () => csv.destroy());
      csv.once("error", (err) => {
        req.log?.error({ err }, "message export failed while streaming");
        res.destroy();
      });
      return { status: 200, body: csv as unknown as string };
    },

    get: async ({ params, res }) => {
      return { status: 200, body: await reader.get(principalOf(res).workspaceId, params.id) };
    },

    checkNumber: async ({ query, req, res }) => {
      const body = await reader.checkNumber(principalOf(res).workspaceId, query, req.log);
      return { status: 200, body };
    },
  };
}
