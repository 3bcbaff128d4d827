// Deferred sends: at send_at a message leaves `scheduled` for the hand-off queue. The release job
// is written to the job outbox by the statement that accepts the message (or reschedules it), so
// every scheduled message has one; a job that finds its message not due (rescheduled later) or
// no longer scheduled does nothing.
import type { MessageLifecycle } from "../server/messages/lifecycle.js";
import { MESSAGE_RELEASE_JOB, MessageReleasePayload } from "./names.js";
import type { JobDefinition } from "./runner.js";

export function messageReleaseJob(lifecycle: MessageLifecycle): JobDefinition<unknown> {
  return {
    name: MESSAGE_RELEASE_JOB,
    concurrency: 20,
    async run(data) {
      const { message_id } = MessageReleasePayload.parse(data);
      await lifecycle.release(message_id);
    },
  };
}
