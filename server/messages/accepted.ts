// What follows an accepted send, whoever accepted it (the REST handler, the tool endpoint): a
// deferred send gets its release job, an immediate one wakes the dispatcher.
import type { AppContext } from "../context.js";
import type { Logger } from "../logger.js";
import type { Accepted } from "./send.js";

export async function afterAccepted(ctx: Pick<AppContext, "services" | "dispatcher">, accepted: Accepted, log: Logger): Promise<void> {
  if (accepted.replayed) return;
  if (accepted.scheduledFor) {
    // Committed already; if the job cannot be created now, the minute sweep releases it.
    await ctx.services.messageLifecycle
      .scheduleRelease(accepted.body.id, accepted.scheduledFor)
      .catch((err: unknown) => log.warn({ err, message_id: accepted.body.id }, "release job not created; the sweep will release it"));
    return;
  }
  ctx.dispatcher.wake();
}
