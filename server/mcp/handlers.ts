// contract.mcp: the endpoint answers through the SDK's transport (its route middleware), the tool
// list through the same tool table.
import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { Config } from "../config.js";
import { principalOf } from "../http/principal.js";
import type { Logger } from "../logger.js";
import { mcpHandler, toolListing } from "./endpoint.js";
import type { ToolServices } from "./tool.js";

const s = initServer();

export function mcpRouter(services: ToolServices, config: Pick<Config, "webUrl" | "secretKey">, logger: Logger) {
  return s.router(contract.mcp, {
    call: {
      middleware: [mcpHandler(services, config, logger)],
      handler: async () => {
        throw new Error("the MCP transport answers POST /v1/mcp in its middleware");
      },
    },
    tools: async ({ res }) => ({ status: 200, body: { data: toolListing(principalOf(res)) } }),
  });
}
