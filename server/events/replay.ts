// GET /v1/events: the workspace's events read back from the log (server/events/log.ts), oldest
// first, from a cursor or from an event id. Reading below the horizon only, a page never shows an
// event that a transaction still running could later put before it: `after=<next_cursor>`
// continues exactly after the page's last event, whatever commits meanwhile.
import type { DataSource } from "typeorm";
import type { Event, EventPage, ListEventsQuery } from "../../contract/index.js";
import { rows } from "../db/rows.js";
import { cursorKey, decodeLogCursor, encodeLogCursor, filterFingerprint } from "../http/cursor.js";
import { ApiError } from "../http/errors.js";
import { LOG_ORDER, LOG_START, afterPosition, type LogPosition } from "./log.js";

const EVENT_ID = /^evt_[A-Za-z0-9]+$/;

/** Where `after` points: a cursor of this listing, or an event of the workspace. */
async function startOf(db: DataSource, key: Buffer, workspaceId: string, after: string | undefined, fingerprint: string): Promise<LogPosition> {
  if (after === undefined) return LOG_START;
  if (!EVENT_ID.test(after)) return decodeLogCursor(key, after, fingerprint, "after");
  const position = await eventPosition(db, workspaceId, after);
  if (!position) {
    const message = "no event with this id in the workspace: it may be older than the events kept";
    throw new ApiError("validation_failed", message, { errors: [{ path: "query.after", message }] });
  }
  return position;
}

/** The log position of one of the workspace's events, or null. */
export async function eventPosition(db: DataSource, workspaceId: string, eventId: string): Promise<LogPosition | null> {
  const [found] = await rows<LogPosition>(db, `SELECT tx::text AS tx, id FROM events WHERE workspace_id = $1 AND id = $2`, [workspaceId, eventId]);
  return found ?? null;
}

export interface LoggedEvent {
  position: LogPosition;
  event: Event;
}

/**
 * Up to `limit` of the workspace's events after `from`, in the log's order, with the filters
 * given; `settled: false` reads up to the newest committed event, not only below the horizon (a
 * one-off read that no later read continues from).
 */
export async function readLog(
  db: DataSource,
  workspaceId: string,
  from: LogPosition,
  limit: number,
  filters: { type?: string; connection?: string; settled?: boolean } = {},
): Promise<LoggedEvent[]> {
  const params: unknown[] = [from.tx, from.id, workspaceId, limit];
  let where = `${afterPosition(1, "events", filters.settled ?? true)} AND events.workspace_id = $3`;
  if (filters.type !== undefined) where += ` AND events.type = $${params.push(filters.type)}`;
  if (filters.connection !== undefined) where += ` AND events.payload->>'connection' = $${params.push(filters.connection)}`;
  const found = await rows<{ tx: string; id: string; payload: Event }>(db, `SELECT tx::text AS tx, id, payload FROM events WHERE ${where} ORDER BY ${LOG_ORDER} LIMIT $4`, params);
  return found.map((r) => ({ position: { tx: r.tx, id: r.id }, event: r.payload }));
}

export async function listEvents(db: DataSource, key: Buffer, workspaceId: string, query: ListEventsQuery): Promise<EventPage> {
  const fingerprint = filterFingerprint(`events:${workspaceId}`, { type: query.type, connection: query.connection });
  const from = await startOf(db, key, workspaceId, query.after, fingerprint);
  const found = await readLog(db, workspaceId, from, query.limit + 1, query);
  const page = found.slice(0, query.limit);
  const last = page.at(-1);
  return {
    data: page.map((e) => e.event),
    next_cursor: found.length > query.limit && last ? encodeLogCursor(key, last.position, fingerprint) : null,
  };
}

/** GET /v1/events as a service: the workspace's event log, a page at a time, with signed cursors. */
export class EventReplay {
  /** Signs the log's cursors. */
  private readonly cursorKey: Buffer;

  constructor(
    private readonly db: DataSource,
    secretKey: Buffer,
  ) {
    this.cursorKey = cursorKey(secretKey);
  }

  list(workspaceId: string, query: ListEventsQuery): Promise<EventPage> {
    return listEvents(this.db, this.cursorKey, workspaceId, query);
  }
}
