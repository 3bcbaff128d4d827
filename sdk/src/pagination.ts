// Cursor pagination (docs/decisions.md, "Reads"): newest first, `next_cursor` null on the last page.
// autoPaginate walks any cursor list of the client; the named helpers cover each one.
import type { SvcClient } from "./client.js";
import { expectOk, type AnyResponse, type OkBody } from "./errors.js";
import type { Event, EventPage, Message, WebhookDelivery } from "./types.gen.js";

export interface CursorPage<T> {
  data: T[];
  next_cursor: string | null;
}

/**
 * Every item across pages, fetching the next page only when the previous one is consumed.
 *
 *     for await (const m of paginate((cursor) => expectOk(client.messages.list({ query: { cursor } })))) …
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<CursorPage<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined = undefined;
  for (;;) {
    const page: CursorPage<T> = await fetchPage(cursor);
    yield* page.data;
    if (page.next_cursor === null || page.next_cursor === undefined) return;
    // A cursor that does not move would loop forever.
    if (page.next_cursor === cursor) throw new Error(`pagination did not advance (cursor ${cursor})`);
    cursor = page.next_cursor;
  }
}

/** A list call's arguments without the cursor, which autoPaginate drives. */
export type AutoPaginateArgs<A> = Omit<NonNullable<A>, "query"> & { query?: Omit<NonNullable<NonNullable<A> extends { query?: infer Q } ? Q : never>, "cursor"> };

/**
 * Every item of any cursor-paginated list of the client, across pages; throws SvcApiError on an
 * error answer.
 *
 *     for await (const d of autoPaginate(client.webhooks.listDeliveries, { params: { id }, query: { status: "failed" } })) …
 */
export function autoPaginate<A extends { query?: { cursor?: string | undefined } | undefined } | undefined, R extends AnyResponse>(
  call: (args: A) => Promise<R>,
  args: AutoPaginateArgs<A>,
): AsyncGenerator<OkBody<R> extends CursorPage<infer T> ? T : never, void, undefined> {
  const given = args as { query?: Record<string, unknown> };
  const run = call as unknown as (args: object) => Promise<R>;
  return paginate((cursor) => expectOk(run({ ...given, query: { ...given.query, ...(cursor !== undefined && { cursor }) } })) as Promise<CursorPage<never>>);
}

/** Filters of `GET /v1/messages` (all but the cursor). */
export type ListAllMessagesQuery = NonNullable<AutoPaginateArgs<Parameters<SvcClient["messages"]["list"]>[0]>["query"]>;

/** Every message matching `query`, newest first, across pages; throws SvcApiError on an error answer. */
export function listAllMessages(client: Pick<SvcClient, "messages">, query: ListAllMessagesQuery = {}): AsyncGenerator<Message, void, undefined> {
  return autoPaginate(client.messages.list, { query });
}

/** Filters of `GET /v1/webhook-endpoints/{id}/deliveries` (all but the cursor). */
export type ListAllWebhookDeliveriesQuery = NonNullable<AutoPaginateArgs<Parameters<SvcClient["webhooks"]["listDeliveries"]>[0]>["query"]>;

/** Every delivery of one webhook endpoint, newest first, across pages. */
export function listAllWebhookDeliveries(
  client: Pick<SvcClient, "webhooks">,
  endpointId: string,
  query: ListAllWebhookDeliveriesQuery = {},
): AsyncGenerator<WebhookDelivery, void, undefined> {
  return autoPaginate(client.webhooks.listDeliveries, { params: { id: endpointId }, query });
}

/** Filters and start of `GET /v1/events`: `after` is a cursor or the id of the last event handled. */
export type EventPagesQuery = NonNullable<NonNullable<Parameters<SvcClient["events"]["list"]>[0]>["query"]>;

/**
 * The event log's pages, oldest first, each fetched when the previous one was consumed; ends after
 * the last page. To catch up again later, start from the id of the last event handled:
 *
 *     for await (const page of eventPages(client, { after: lastEventId })) for (const e of page.data) …
 */
export async function* eventPages(client: Pick<SvcClient, "events">, query: EventPagesQuery = {}): AsyncGenerator<EventPage, void, undefined> {
  let after = query.after;
  for (;;) {
    const page: EventPage = await expectOk(client.events.list({ query: { ...query, ...(after !== undefined && { after }) } }));
    yield page;
    if (page.next_cursor === null) return;
    // A cursor that does not move would loop forever.
    if (page.next_cursor === after) throw new Error(`pagination did not advance (cursor ${after})`);
    after = page.next_cursor;
  }
}

/** Every event of the log after `query.after` (all kept, without it), oldest first, across pages. */
export async function* listAllEvents(client: Pick<SvcClient, "events">, query: EventPagesQuery = {}): AsyncGenerator<Event, void, undefined> {
  for await (const page of eventPages(client, query)) yield* page.data;
}
