// The live event feed: the workspace's events as server-sent events, as they are recorded in the
// event outbox (the same rows, and payloads, webhooks fan out from). Mounted beside the contract:
// ts-rest answers one body, a stream is many. The dashboard's session, or an API key with
// webhooks:read; tenancy from the credential only. A client that sends `Last-Event-ID` first gets
// what the workspace recorded after that event (from the log, server/events/log.ts), then live.
//
// One `EventFeed` per process reads the outbox for every open stream at once: one query per tick
// for all the workspaces with a stream open, fanned out to their streams, so the database's cost
// does not grow with the number of open streams (docs/decisions.md, "Event stream: one poller per
// process"). It polls only while a stream is open.
import type { Request, RequestHandler, Response } from "express";
import type { DataSource } from "typeorm";
import { parse as parseCookies } from "cookie";
import { resolveApiKey, resolveSession } from "../auth/credentials.js";
import type { ApiKeyCache } from "../auth/key-cache.js";
import { bearerToken, requireScope, unknownKey } from "../http/authenticate.js";
import { SESSION_COOKIE } from "../auth/session-cookie.js";
import { rows } from "../db/rows.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";
import { eventPosition, readLog } from "./replay.js";

export const EVENT_STREAM_PATH = "/v1/events/stream";

/**
 * An event's id is taken before its transaction commits, so a slower transaction can commit an
 * event older than one already sent: each poll looks this far back and skips what it sent.
 */
const LOOK_BACK_MS = 10_000;
const BATCH = 200;

/** The smallest id of any event created at `ms` or later (ids sort by creation time). */
function floorId(ms: number): string {
  return newId("evt", Math.max(0, ms)).slice(0, "evt_".length + 10);
}

interface Subscriber {
  workspaceId: string;
  /** Events from the moment the stream opened; what came before is the log's business. */
  floor: string;
  send(chunk: string): void;
}

/** What the poller has read since it started: ids sent within the look-back window. */
interface Window {
  startedAt: number;
  /** The next poll reads from `anchor - LOOK_BACK_MS`: the start of the last complete poll. */
  anchor: number;
  sent: Set<string>;
}

export class EventFeed {
  private readonly subscribers = new Set<Subscriber>();
  private timer: NodeJS.Timeout | undefined;
  private window: Window | undefined;
  private polling = false;

  constructor(
    private readonly db: DataSource,
    private readonly pollMs = 500,
  ) {}

  /** Open streams subscribed. */
  get streams(): number {
    return this.subscribers.size;
  }

  /** Whether the poller runs (it does exactly while a stream is open). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /**
   * `send` gets each new event of `workspaceId` as an SSE block, once, in id order per poll: those
   * whose id is at or after `floor` (by default, from now on). Returns the unsubscribe.
   */
  subscribe(workspaceId: string, send: (chunk: string) => void, floor = floorId(Date.now())): () => void {
    const subscriber: Subscriber = { workspaceId, floor, send };
    this.subscribers.add(subscriber);
    if (!this.timer) {
      const now = Date.now();
      this.window = { startedAt: now, anchor: now, sent: new Set() };
      this.timer = setInterval(() => void this.poll(), this.pollMs);
    }
    void this.poll();
    return () => {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size > 0) return;
      clearInterval(this.timer);
      this.timer = undefined;
      this.window = undefined;
    };
  }

  private async poll(): Promise<void> {
    const window = this.window;
    if (!window || this.polling) return;
    this.polling = true;
    try {
      const startedAt = Date.now();
      const floor = floorId(Math.max(window.startedAt, window.anchor - LOOK_BACK_MS));
      const workspaces = [...new Set([...this.subscribers].map((s) => s.workspaceId))];
      const limit = BATCH + window.sent.size;
      const found = await rows<{ id: string; workspace_id: string; payload: unknown; created_at: Date }>(
        this.db,
        `SELECT id, workspace_id, payload, created_at FROM events WHERE id >= $1 AND workspace_id = ANY($2) ORDER BY id LIMIT $3`,
        [floor, workspaces, limit],
      );
      if (window !== this.window) return; // every stream closed meanwhile
      for (const e of found) {
        if (window.sent.has(e.id)) continue;
        window.sent.add(e.id);
        const chunk = sseBlock(e.id, e.payload);
        for (const s of this.subscribers) if (s.workspaceId === e.workspace_id && e.id >= s.floor) s.send(chunk);
      }
      // A full batch leaves newer rows unread: read on from the last one's time, never back.
      const last = found.at(-1);
      const reached = found.length === limit && last ? new Date(last.created_at).getTime() : startedAt;
      window.anchor = Math.max(window.anchor, reached);
      const next = floorId(Math.max(window.startedAt, window.anchor - LOOK_BACK_MS));
      for (const id of window.sent) if (id < next) window.sent.delete(id);
    } catch {
      // A failed poll (database briefly away) is retried at the next tick from the same point.
    } finally {
      this.polling = false;
    }
  }
}

/** One event as a server-sent event: its id, and the webhook payload as data. */
function sseBlock(id: string, payload: unknown): string {
  return `id: ${id}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** How many events a resumed stream reads from the log at a time before it goes live. */
const RESUME_PAGE = 500;

export interface EventStreamOptions {
  heartbeatMs?: number;
  /** How often the credential is checked again; the stream ends when it no longer holds. */
  sessionCheckMs?: number;
  /** Resolved API keys of this process (server/auth/key-cache.ts). */
  keyCache?: ApiKeyCache;
}

export function eventStream(db: DataSource, feed: EventFeed, options: EventStreamOptions = {}): RequestHandler {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const sessionCheckMs = options.sessionCheckMs ?? 60_000;

  async function workspaceOf(req: Request): Promise<string> {
    const bearer = bearerToken(req);
    if (bearer !== undefined) {
      const principal = await resolveApiKey(db, bearer, options.keyCache);
      if (!principal) throw unknownKey();
      requireScope(principal.scopes, "webhooks:read");
      return principal.workspaceId;
    }
    // Or the dashboard's cookie: any member reads the workspace's events.
    const token = parseCookies(req.headers.cookie ?? "")[SESSION_COOKIE];
    const resolved = token ? await resolveSession(db, token) : null;
    if (!resolved) throw new ApiError("unauthorized", "Sign in first: the event stream takes the dashboard session.");
    if (!resolved.principal) throw new ApiError("forbidden", "You are not a member of a workspace yet; accept an invitation first.");
    return resolved.principal.workspaceId;
  }

  return (req, res, next) => {
    workspaceOf(req).then((workspaceId) => stream(req, res, workspaceId), next);
  };

  function stream(req: Request, res: Response, workspaceId: string): void {
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Accel-Buffering": "no",
    });
    res.write(`retry: 3000\n\n`);
    let closed = false;
    const checkSession = async () => {
      try {
        if ((await workspaceOf(req)) !== workspaceId) end();
      } catch (err) {
        if (err instanceof ApiError) end();
      }
    };
    const timers = [setInterval(() => res.write(`: keep-alive\n\n`), heartbeatMs), setInterval(() => void checkSession(), sessionCheckMs)];
    const lastEventId = req.headers["last-event-id"];
    // Live from here on; a resumed stream holds what arrives live until it has sent the log's events
    // before this floor, so each event is sent once and the log's come first.
    const floor = floorId(Date.now());
    let held: string[] | null = typeof lastEventId === "string" && lastEventId !== "" ? [] : null;
    const unsubscribe = feed.subscribe(workspaceId, (chunk) => (held ? held.push(chunk) : res.write(chunk)), floor);
    if (held) {
      void resume(lastEventId as string).finally(() => {
        if (!closed) for (const chunk of held ?? []) res.write(chunk);
        held = null;
      });
    }
    /** The workspace's events after `eventId` in the log, up to the live floor; none when the id is unknown (pruned, or another workspace's). */
    async function resume(eventId: string): Promise<void> {
      try {
        let from = await eventPosition(db, workspaceId, eventId);
        while (from && !closed) {
          const page = await readLog(db, workspaceId, from, RESUME_PAGE, { settled: false });
          for (const { event } of page) if (event.id < floor) res.write(sseBlock(event.id, event));
          from = page.length === RESUME_PAGE ? page.at(-1)!.position : null;
        }
      } catch {
        // The database went away while resuming: the client reconnects with the last id it got.
        end();
      }
    }
    function end(): void {
      if (closed) return;
      closed = true;
      unsubscribe();
      for (const t of timers) clearInterval(t);
      res.end();
    }
    req.on("close", end);
  }
}
