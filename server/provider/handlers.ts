import type { AppRouteImplementation } from "@ts-rest/express";
import type { contract } from "../../contract/index.js";
import type { AppContext } from "../context.js";

/** `ops.providerCallback`: 202 whether the report was applied or ignored (a duplicate, nothing to do). */
export function providerCallbackHandler(ctx: AppContext): AppRouteImplementation<typeof contract.ops.providerCallback> {
  return async ({ params, body }) => {
    const ack = await ctx.services.providerCallbacks.handle(params.providerName, params.token, body);
    return { status: 202, body: ack };
  };
}
