// The Idempotency-Key (docs/decisions.md, "Messaging"). A send writes its key's record, holding the
// response, in the same statement that commits the message (server/messages/send.ts), so a
// replay can never see an effect without its response or a response without its effect. Records
// are kept for RETENTION_HOURS; an older one no longer deduplicates and is pruned by a job.
import { createHash } from "node:crypto";
import type { DataSource } from "typeorm";
import { rows } from "../db/rows.js";

export const RETENTION_HOURS = 24;
const PURGE_BATCH = 5_000;

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

/** Removes records past retention, in batches; returns how many. */
export async function purgeExpiredIdempotencyKeys(db: DataSource): Promise<number> {
  let purged = 0;
  for (;;) {
    const deleted = await rows(
      db,
      `DELETE FROM idempotency_keys WHERE (workspace_id, key) IN (
         SELECT workspace_id, key FROM idempotency_keys WHERE created_at < now() - interval '${RETENTION_HOURS} hours' LIMIT $1)
       RETURNING 1`,
      [PURGE_BATCH],
    );
    purged += deleted.length;
    if (deleted.length < PURGE_BATCH) return purged;
  }
}
