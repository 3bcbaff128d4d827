// What happens to a message between acceptance and hand-off: cancel, reschedule, and the release
// of a deferred send when its time comes. The moves are written by the store (store/moves.ts).
import type { DataSource, EntityManager } from "typeorm";
import type { Message as MessageView, RescheduleBody } from "../../contract/index.js";
import { MESSAGE_RELEASE_JOB } from "../../jobs/names.js";
import { enqueueJob } from "../db/job-outbox.js";
import { ApiError } from "../http/errors.js";
import { isValidTimeZone } from "../time-zones.js";
import { sourcesOf } from "./status.js";
import { dropHandOff, lockMessage, moveMessage, queueHandOff, type Locked } from "./store/moves.js";

export class MessageLifecycle {
  constructor(
    private readonly db: DataSource,
    /** Called when a message becomes ready for hand-off in this process. */
    private readonly onQueued: () => void,
  ) {}

  async cancel(workspaceId: string, id: string): Promise<MessageView> {
    return this.db.transaction(async (em) => {
      const locked = await this.lock(em, workspaceId, id);
      // The dispatcher marks `submitting` under this row's lock, so holding it settles the race.
      const view = await moveMessage(em, locked, "cancel");
      if (!view) {
        throw ApiError.invalidState(notCancelable(locked.message.status));
      }
      await dropHandOff(em, id);
      return view;
    });
  }

  async reschedule(workspaceId: string, id: string, input: RescheduleBody): Promise<MessageView> {
    if (input.timezone !== undefined && !isValidTimeZone(input.timezone)) {
      throw ApiError.validation([{ path: "timezone", message: "must be an IANA time zone name" }]);
    }
    const sendAt = new Date(input.send_at);
    const view = await this.db.transaction(async (em) => {
      const locked = await this.lock(em, workspaceId, id);
      const patch = { sendAt, detail: `rescheduled to ${sendAt.toISOString()}`, ...(input.timezone !== undefined ? { timezone: input.timezone } : {}) };
      const moved = await moveMessage(em, locked, "reschedule", patch);
      if (!moved) throw ApiError.invalidState(`The message is ${locked.message.status}, no longer scheduled.`);
      // The job of the earlier send_at finds the message not due and leaves it alone.
      await enqueueJob(em, MESSAGE_RELEASE_JOB, { message_id: id }, sendAt);
      return moved;
    });
    return view;
  }

  /** Moves a due scheduled message to the hand-off queue; a no-op when it is not (yet) due. */
  async release(messageId: string): Promise<void> {
    const queued = await this.db.transaction(async (em) => {
      const locked = await lockMessage(em, messageId, null);
      if (!locked) return false;
      const { message, connection } = locked;
      // Released already (a job delivered twice), canceled, or moved to a later send_at.
      if (!sourcesOf("release").includes(message.status) || !message.sendAt || message.sendAt.getTime() > Date.now() + 1000) return false;
      if (connection.state !== "connected") {
        const reason = `the connection ${connection.slug} was ${connection.state} when the message was due`;
        await moveMessage(em, locked, "expire", { errorCode: "connection_not_ready", errorMessage: reason, detail: reason });
        return false;
      }
      await queueHandOff(em, message);
      return (await moveMessage(em, locked, "release")) !== null;
    });
    if (queued) this.onQueued();
  }

  private async lock(em: EntityManager, workspaceId: string, id: string): Promise<Locked> {
    const locked = await lockMessage(em, id, workspaceId);
    if (!locked) throw ApiError.notFound("message");
    return locked;
  }
}

/** Why a message in `status` cannot be canceled, as the 409 says it. */
function notCancelable(status: string): string {
  if (status === "canceled") return "The message is already canceled.";
  if (status === "failed") return "The message has failed; there is nothing left to cancel.";
  return `The message is ${status}: it was already handed to the provider and cannot be canceled.`;
}
