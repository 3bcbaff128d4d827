// Rate limits. Two stores: per-process token buckets for the per-key request rate (on the hot
// path, so no query), and fixed windows in the database for sign-in limits, which must hold across
// processes.
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

/**
 * Per-process token buckets for the per-key request rate (on the hot path, so no query): each key
 * may send `burst` requests at once, then `ratePerSecond` a second, tokens refilling continuously.
 */
export class TokenBucketLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly msToFull: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
  ) {
    this.msToFull = (burst / ratePerSecond) * 1000;
  }

  take(key: string, now = Date.now()): LimitDecision {
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) * this.ratePerSecond) / 1000);
      b.at = now;
    } else {
      if (this.buckets.size >= 100_000) this.forgetFull(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    }
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    // Allowed: when the bucket is full again. Refused: when the next request will pass.
    const wait = allowed ? this.burst - b.tokens : 1 - b.tokens;
    return { allowed, limit: this.burst, remaining: Math.floor(b.tokens), resetSeconds: Math.max(1, Math.ceil(wait / this.ratePerSecond)) };
  }

  /** A full bucket is the same as none. */
  private forgetFull(now: number): void {
    for (const [key, b] of this.buckets) if (now - b.at >= this.msToFull) this.buckets.delete(key);
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

  /** Hits so far in the current window, without adding one. */
  async count(bucket: string, windowMs: number, now = Date.now()): Promise<number> {
    const start = now - (now % windowMs);
    const rows: { hits: number }[] = await this.db.query(`SELECT hits FROM rate_limits WHERE bucket = $1 AND window_start = to_timestamp($2 / 1000.0)`, [bucket, start]);
    return rows[0]?.hits ?? 0;
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
