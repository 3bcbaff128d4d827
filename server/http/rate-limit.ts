// Fixed-window rate limits. Two stores: per-process memory for the per-key request rate (on the
// hot path, so no query), and the database for sign-in limits, which must hold across processes.
import type { DataSource } from "typeorm";

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

function decide(hits: number, limit: number, windowStart: number, windowMs: number, now: number): LimitDecision {
  return {
    allowed: hits <= limit,
    limit,
    remaining: Math.max(0, limit - hits),
    resetSeconds: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)),
  };
}

export class MemoryRateLimiter {
  private readonly windows = new Map<string, { start: number; hits: number }>();

  constructor(private readonly windowMs: number) {}

  hit(bucket: string, limit: number, now = Date.now()): LimitDecision {
    const start = now - (now % this.windowMs);
    let w = this.windows.get(bucket);
    if (!w || w.start !== start) {
      if (this.windows.size > 100_000) this.windows.clear();
      w = { start, hits: 0 };
      this.windows.set(bucket, w);
    }
    w.hits++;
    return decide(w.hits, limit, start, this.windowMs, now);
  }
}

export class DatabaseRateLimiter {
  constructor(private readonly db: DataSource) {}

  async hit(bucket: string, limit: number, windowMs: number, now = Date.now()): Promise<LimitDecision> {
    const start = now - (now % windowMs);
    const rows: { hits: number }[] = await this.db.query(
      `INSERT INTO rate_limits (bucket, window_start, hits) VALUES ($1, to_timestamp($2 / 1000.0), 1)
       ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limits.hits + 1
       RETURNING hits`,
      [bucket, start],
    );
    return decide(rows[0]!.hits, limit, start, windowMs, now);
  }

  async purgeExpired(olderThanMs = 24 * 3600_000): Promise<void> {
    await this.db.query(`DELETE FROM rate_limits WHERE window_start < now() - ($1 || ' milliseconds')::interval`, [String(olderThanMs)]);
  }
}

/** IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers) and Retry-After when refused. */
export function rateLimitHeaders(d: LimitDecision): Record<string, string> {
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(d.limit),
    "RateLimit-Remaining": String(d.remaining),
    "RateLimit-Reset": String(d.resetSeconds),
  };
  if (!d.allowed) headers["Retry-After"] = String(d.resetSeconds);
  return headers;
}
