// Reading the event log back (docs/events.md): the workspace's events in
// the order brokers get them, from a cursor, kept EVENTS_RETENTION_DAYS (30 by default).
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionRef, Timestamp, chars, page, problems, queryInteger, type RouteMetadata } from "./common.js";

const c = initContract();

/** One event: the payload webhooks deliver and brokers carry. */
export const Event = z.object({
  id: z.string().describe("Identifier with prefix `evt_`: `Svc-Event-Id` of webhooks, `Nats-Msg-Id` and AMQP `message_id`"),
  type: z.string().describe("The event's name (the webhook catalogue)"),
  created_at: Timestamp,
  connection: z.string().nullable().describe("The connection's slug; null for events of no connection"),
  data: z.record(z.unknown()).describe("The event's data, as webhooks deliver it"),
});
export type Event = z.infer<typeof Event>;

export const EventPage = page(Event);
export type EventPage = z.infer<typeof EventPage>;

export const ListEventsQuery = z
  .object({
    after: chars(1, 200)
      .describe("Continue after this position: a `next_cursor` of an earlier page (with the same filters), or an event id (`evt_…`) of the workspace, such as the last one a consumer handled")
      .optional(),
    limit: queryInteger(1, 1000).default(100),
    type: chars(1, 100).describe("Only events of this type, e.g. `message.delivered`").optional(),
    connection: ConnectionRef.describe("Only events of the connection with this slug").optional(),
  })
  .strict();
export type ListEventsQuery = z.infer<typeof ListEventsQuery>;

const read = { security: { auth: "key_or_session", scope: "webhooks:read" }, tag: "Webhooks" } satisfies RouteMetadata;

export const events = c.router(
  {
    list: {
      method: "GET",
      path: "/v1/events",
      summary: "Replay events from a cursor (extension)",
      description:
        "The workspace's events, oldest first, in the order brokers receive them; `after` continues exactly after the last event of a page. " +
        "`next_cursor` is null on the last page: to catch up later, pass the id of the last event read as `after`. " +
        "Events are kept 30 days (EVENTS_RETENTION_DAYS). Without `after` the list starts at the oldest event kept.",
      query: ListEventsQuery,
      responses: { 200: EventPage, ...problems(400, 401, 403, 429) },
      metadata: read,
    },
  },
  { strictStatusCodes: true },
);
