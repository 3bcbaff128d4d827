// The live event monitor's feed: the session's workspace's events as server-sent events, as they
// are recorded in the event outbox (the same rows, and payloads, webhooks fan out from). Mounted
// beside the contract: ts-rest answers one body, a stream is many. Tenancy from the session only.
import type { Request, RequestHandler, Response } from "express";
import type { DataSource } from "typeorm";
import { parse as parseCookies } from "cookie";
import { resolveSession } from "../auth/credentials.js";
import { SESSION_COOKIE } from "../auth/session-cookie.js";
import { rows } from "../db/rows.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";

export const EVENT_STREAM_PATH = "/v1/events/stream";

/**
 * An event's id is taken before its transaction commits, so a slower transaction can commit an
 * event older than one already sent: each poll looks this far back and skips what it sent.
 */
const LOOK_BACK_MS = 10_000;
const BATCH = 200;

export interface EventStreamOptions {
  pollMs?: number;
  heartbeatMs?: number;
  /** How often the session is checked again; the stream ends when it has ended. */
  sessionCheckMs?: number;
}

/** The smallest id of any event created at `ms` or later (ids sort by creation time). */
function floorId(ms: number): string {
  return newId("evt", Math.max(0, ms)).slice(0, "evt_".length + 10);
}

export function eventStream(db: DataSource, options: EventStreamOptions = {}): RequestHandler {
  const pollMs = options.pollMs ?? 500;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const sessionCheckMs = options.sessionCheckMs ?? 60_000;

  async function workspaceOf(req: Request): Promise<string> {
    // The dashboard's cookie only: an API key (or any bearer) is no way in, like every session route.
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
    const connectedAt = Date.now();
    /** Ids sent within the look-back window, with their creation time, to skip on the next polls. */
    const sent = new Map<string, number>();
    let newest = connectedAt;
    let closed = false;
    let polling = false;

    const poll = async () => {
      if (closed || polling) return;
      polling = true;
      try {
        const from = Math.max(connectedAt, newest - LOOK_BACK_MS);
        const found = await rows<{ id: string; payload: unknown; created_at: Date }>(
          db,
          `SELECT id, payload, created_at FROM events WHERE id >= $1 AND workspace_id = $2 ORDER BY id LIMIT $3`,
          [floorId(from), workspaceId, BATCH + sent.size],
        );
        for (const e of found) {
          if (closed || sent.has(e.id)) continue;
          const at = new Date(e.created_at).getTime();
          sent.set(e.id, at);
          newest = Math.max(newest, at);
          res.write(`id: ${e.id}\ndata: ${JSON.stringify(e.payload)}\n\n`);
        }
        for (const [id, at] of sent) if (at < newest - LOOK_BACK_MS) sent.delete(id);
      } catch {
        // A failed poll (database briefly away) is retried at the next tick; the page keeps listening.
      } finally {
        polling = false;
      }
    };
    const checkSession = async () => {
      try {
        if ((await workspaceOf(req)) !== workspaceId) end();
      } catch (err) {
        if (err instanceof ApiError) end();
      }
    };
    const timers = [
      setInterval(() => void poll(), pollMs),
      setInterval(() => res.write(`: keep-alive\n\n`), heartbeatMs),
      setInterval(() => void checkSession(), sessionCheckMs),
    ];
    function end(): void {
      if (closed) return;
      closed = true;
      for (const t of timers) clearInterval(t);
      res.end();
    }
    req.on("close", end);
    void poll();
  }
}
