// contract.mcp: the endpoint answers through the SDK's transport (its route middleware), the tool
// list through the same tool table.
import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { AppContext } from "../context.js";
import { principalOf } from "../http/principal.js";
import { mcpHandler, toolListing } from "./endpoint.js";

const s = initServer();

export function mcpRouter(ctx: AppContext) {
  return s.router(contract.mcp, {
    call: {
      middleware: [mcpHandler(ctx)],
      handler: async () => {
        throw new Error("the MCP transport answers POST /v1/mcp in its middleware");
      },
    },
    tools: async ({ res }) => ({ status: 200, body: { data: toolListing(principalOf(res)) } }),
  });
}
