// The idempotency store (product.md "Idempotency"). A key is claimed before the work starts, in
// its own statement, so a concurrent duplicate sees the claim and gets 409 instead of racing. The
// work then completes the record in the same atomic statement that commits its effect, so a
// replay can never see an effect without its response or a response without its effect. A
// claim left behind by a crashed process expires after `lockSeconds` and may be taken over.
import { createHash } from "node:crypto";
import type { DataSource } from "typeorm";
import { prepared } from "../db/prepared.js";
import { rows } from "../db/rows.js";
import { ApiError } from "./errors.js";

export const RETENTION_HOURS = 24;

export type Claim =
  | { kind: "claimed"; workspaceId: string; key: string; /** the row of the piggybacked read, if any */ row?: Record<string, unknown> }
  | { kind: "replay"; status: number; body: unknown };

/** A read the caller needs next, run in the claim's round trip; its parameters start at $5. */
export interface PiggybackRead {
  name: string;
  sql: string;
  params: unknown[];
}

/** SHA-256 of the canonical JSON (keys sorted at every level) of the request body. */
export function requestFingerprint(body: unknown): Buffer {
  return createHash("sha256").update(canonicalJson(body)).digest();
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

export class IdempotencyStore {
  constructor(
    private readonly db: DataSource,
    private readonly lockSeconds = 60,
  ) {}

  async claim(workspaceId: string, key: string, fingerprint: Buffer, read?: PiggybackRead): Promise<Claim> {
    // Insert a fresh claim, or take over one that expired (older than the retention window, or
    // an in-flight claim whose process died). One statement: two racers cannot both win.
    const [result] = await prepared<Record<string, unknown> & { claimed: number }>(
      this.db,
      `idempotency-claim${read ? `:${read.name}` : ""}`,
      `WITH claim AS (
       INSERT INTO idempotency_keys (workspace_id, key, fingerprint, locked_until, created_at)
       VALUES ($1, $2, $3, now() + ($4 || ' seconds')::interval, now())
       ON CONFLICT (workspace_id, key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, locked_until = EXCLUDED.locked_until,
             response_status = NULL, response_body = NULL, created_at = now()
       WHERE idempotency_keys.created_at < now() - interval '${RETENTION_HOURS} hours'
          OR (idempotency_keys.response_status IS NULL AND idempotency_keys.locked_until < now()
              AND idempotency_keys.fingerprint = EXCLUDED.fingerprint)
       RETURNING 1)
       SELECT (SELECT count(*) FROM claim)::int AS claimed, r.*
         FROM (SELECT 1) AS one LEFT JOIN (${read?.sql ?? "SELECT 1 AS nothing"}) AS r ON true`,
      [workspaceId, key, fingerprint, String(this.lockSeconds), ...(read?.params ?? [])],
      // The accepting statement that completes this claim commits synchronously and so flushes it.
      { asyncCommit: true },
    );
    if (result!.claimed) {
      const { claimed: _claimed, ...row } = result!;
      return { kind: "claimed", workspaceId, key, ...(read && row.id !== null && row.id !== undefined ? { row } : {}) };
    }

    const [existing] = (await this.db.query(
      `SELECT fingerprint, response_status, response_body FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
      [workspaceId, key],
    )) as { fingerprint: Buffer; response_status: number | null; response_body: unknown }[];
    if (!existing) return this.claim(workspaceId, key, fingerprint, read); // expired and purged in between
    if (!existing.fingerprint.equals(fingerprint)) {
      throw new ApiError("idempotency_mismatch", "This Idempotency-Key was used with a different request body.");
    }
    if (existing.response_status === null) {
      throw new ApiError("idempotency_in_flight", "A request with this Idempotency-Key is still in flight; retry shortly.", { retryAfter: 1 });
    }
    return { kind: "replay", status: existing.response_status, body: existing.response_body };
  }

  /**
   * SQL for a CTE member that completes the claim with the response; the caller runs it in the
   * statement that commits the effect. Parameters: workspace id, key, status, body (jsonb).
   */
  static completeSql(p: { workspace: string; key: string; status: string; body: string }): string {
    return `UPDATE idempotency_keys SET response_status = ${p.status}, response_body = ${p.body}, locked_until = NULL
             WHERE workspace_id = ${p.workspace} AND key = ${p.key}`;
  }

  /** The work failed before committing anything: release the key so the request can be retried. */
  async release(claim: Extract<Claim, { kind: "claimed" }>): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2 AND response_status IS NULL`, [claim.workspaceId, claim.key]);
  }

  async purgeExpired(): Promise<number> {
    const purged = await rows(this.db, `DELETE FROM idempotency_keys WHERE created_at < now() - interval '${RETENTION_HOURS} hours' RETURNING 1`);
    return purged.length;
  }
}
