// Cursor pagination (product.md, Lists): newest first, `next_cursor` null on the last page.
import type { z } from "zod";
import type { ListMessagesQuery, Message } from "../../contract/index.js";
import type { SvcClient } from "./client.js";
import { expectOk } from "./errors.js";

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

/** Filters of `GET /v1/messages` (all but the cursor, which paginate drives). */
export type ListAllMessagesQuery = Omit<z.input<typeof ListMessagesQuery>, "cursor">;

/** Every message matching `query`, newest first, across pages; throws SvcApiError on an error answer. */
export function listAllMessages(client: Pick<SvcClient, "messages">, query: ListAllMessagesQuery = {}): AsyncGenerator<Message, void, undefined> {
  return paginate((cursor) => expectOk(client.messages.list({ query: { ...query, ...(cursor !== undefined && { cursor }) } })));
}
