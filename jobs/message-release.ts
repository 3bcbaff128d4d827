// Deferred sends: at send_at a message leaves `scheduled` for the hand-off queue. Each scheduled
// message gets a job at its send_at; a sweep every minute releases any whose job was lost (for
// example when the process stopped between the commit and the job's creation).
import type { AppContext } from "../server/context.js";
import { MESSAGE_RELEASE_JOB, MESSAGES_SWEEP_JOB, MessageReleasePayload } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function messageReleaseJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: MESSAGE_RELEASE_JOB,
    concurrency: 20,
    async run(data) {
      const { message_id } = MessageReleasePayload.parse(data);
      await ctx.services.messageLifecycle.release(message_id);
    },
  };
}

export function scheduledSweepJob(ctx: AppContext): JobDefinition<unknown> {
  return {
    name: MESSAGES_SWEEP_JOB,
    concurrency: 1,
    async run() {
      await ctx.services.messageLifecycle.releaseOverdue();
    },
  };
}
