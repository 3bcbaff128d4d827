// What happens to a message between acceptance and hand-off: cancel, reschedule, and the release
// of a deferred send when its time comes. Status moves go through status.ts.
import type { DataSource, EntityManager } from "typeorm";
import type { Message as MessageView, RescheduleBody } from "../../contract/index.js";
import type { JobRunner } from "../../jobs/runner.js";
import { MESSAGE_RELEASE_JOB, type MessageReleasePayload } from "../../jobs/names.js";
import { Connection } from "../connections/entities.js";
import { recordEvent } from "../events/record.js";
import { ApiError } from "../http/errors.js";
import type { Logger } from "../logger.js";
import { isValidTimeZone } from "../schedules/recurrence.js";
import { Message, TimelineEntry } from "./entities.js";
import { canMove, CANCELABLE } from "./status.js";
import { messageView } from "./view.js";

export class MessageLifecycle {
  constructor(
    private readonly db: DataSource,
    private readonly jobs: JobRunner,
    private readonly logger: Logger,
    /** Called when a message becomes ready for hand-off in this process. */
    private readonly onQueued: () => void,
  ) {}

  /** Deferred sends wait for their job; called after the accepting transaction committed. */
  async scheduleRelease(messageId: string, at: Date): Promise<void> {
    await this.jobs.agenda.schedule(at, MESSAGE_RELEASE_JOB, { message_id: messageId } satisfies MessageReleasePayload);
  }

  async cancel(workspaceId: string, id: string): Promise<MessageView> {
    return this.db.transaction(async (em) => {
      const { message, slug } = await this.lock(em, workspaceId, id);
      if (!CANCELABLE.includes(message.status)) {
        throw ApiError.invalidState(`The message is ${message.status}: it was already handed to the provider and cannot be canceled.`);
      }
      // The dispatcher marks `submitting` under this row's lock, so holding it settles the race.
      await em.query(`DELETE FROM dispatch_queue WHERE message_id = $1`, [id]);
      return this.move(em, message, slug, "canceled", null);
    });
  }

  async reschedule(workspaceId: string, id: string, input: RescheduleBody): Promise<MessageView> {
    if (input.timezone !== undefined && !isValidTimeZone(input.timezone)) {
      throw ApiError.validation([{ path: "timezone", message: "must be an IANA time zone name" }]);
    }
    const sendAt = new Date(input.send_at);
    const view = await this.db.transaction(async (em) => {
      const { message, slug } = await this.lock(em, workspaceId, id);
      if (message.status !== "scheduled") throw ApiError.invalidState(`The message is ${message.status}, no longer scheduled.`);
      message.sendAt = sendAt;
      if (input.timezone !== undefined) message.timezone = input.timezone;
      message.updatedAt = new Date();
      await em.update(Message, { id }, { sendAt, timezone: message.timezone, updatedAt: message.updatedAt });
      await em.insert(TimelineEntry, { messageId: id, status: "scheduled", detail: `rescheduled to ${sendAt.toISOString()}` });
      return messageView(message, slug);
    });
    await this.scheduleRelease(id, sendAt);
    return view;
  }

  /** Moves a due scheduled message to the hand-off queue; a no-op when it is not (yet) due. */
  async release(messageId: string): Promise<void> {
    const queued = await this.db.transaction(async (em) => {
      const message = await em.findOne(Message, { where: { id: messageId }, lock: { mode: "pessimistic_write" } });
      if (!message || message.status !== "scheduled" || !message.sendAt || message.sendAt.getTime() > Date.now() + 1000) return false;
      const connection = await em.findOneByOrFail(Connection, { id: message.connectionId });
      if (connection.state !== "connected") {
        message.errorCode = "connection_not_ready";
        message.errorMessage = `the connection ${connection.slug} was ${connection.state} when the message was due`;
        await this.move(em, message, connection.slug, "failed", message.errorMessage);
        return false;
      }
      await em.query(`INSERT INTO dispatch_queue (message_id, connection_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [message.id, connection.id]);
      await this.move(em, message, connection.slug, "queued", null);
      return true;
    });
    if (queued) this.onQueued();
  }

  /** Releases every scheduled message whose time has passed (the safety net for lost jobs). */
  async releaseOverdue(): Promise<number> {
    const due: { id: string }[] = await this.db.query(
      `SELECT id FROM messages WHERE status = 'scheduled' AND send_at <= now() - interval '5 seconds' ORDER BY send_at LIMIT 1000`,
    );
    for (const { id } of due) {
      await this.release(id).catch((err: unknown) => this.logger.error({ err, message_id: id }, "release failed"));
    }
    return due.length;
  }

  private async lock(em: EntityManager, workspaceId: string, id: string): Promise<{ message: Message; slug: string }> {
    const message = await em.findOne(Message, { where: { id, workspaceId, direction: "outbound" }, lock: { mode: "pessimistic_write" } });
    if (!message) throw ApiError.notFound("message");
    const connection = await em.findOneByOrFail(Connection, { id: message.connectionId });
    return { message, slug: connection.slug };
  }

  /** Applies one status move with its timeline entry and event, inside the caller's transaction. */
  private async move(em: EntityManager, message: Message, slug: string, to: "queued" | "canceled" | "failed", detail: string | null): Promise<MessageView> {
    if (!canMove(message.status, to)) throw ApiError.invalidState(`A ${message.status} message cannot become ${to}.`);
    message.status = to;
    message.updatedAt = new Date();
    await em.update(Message, { id: message.id }, { status: to, updatedAt: message.updatedAt, errorCode: message.errorCode, errorMessage: message.errorMessage });
    await em.insert(TimelineEntry, { messageId: message.id, status: to, detail });
    const view = messageView(message, slug);
    await recordEvent(em, { workspaceId: message.workspaceId, type: `message.${to}`, connection: { id: message.connectionId, slug }, data: view });
    return view;
  }
}
