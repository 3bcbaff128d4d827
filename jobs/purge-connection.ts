// Removes a deleted connection's data: pairing grants, messages (their timeline and hand-off rows
// go with them: a trigger on messages, migration MessagePathPerRow) and callback dedupe rows. Queued by the soft delete; idempotent, so Agenda running it
// twice, or a later run after a crash half-way, finishes the same work. Messages go in batches so
// a connection with millions of them never holds one huge transaction.
import type { DataSource } from "typeorm";
import { rows } from "../server/db/rows.js";
import { CONNECTION_PURGE_JOB, ConnectionPurgePayload } from "./names.js";
import type { JobDefinition } from "./runner.js";
import { wipeSession } from "../server/engines/baileys/auth-state.js";

const BATCH = 5_000;

export function purgeConnectionJob(db: DataSource): JobDefinition<unknown> {
  return {
    name: CONNECTION_PURGE_JOB,
    concurrency: 2,
    lockLifetimeMs: 10 * 60_000,
    async run(data) {
      const { connection_id } = ConnectionPurgePayload.parse(data);
      await purgeConnection(db, connection_id);
    },
  };
}

/** Returns how many messages were removed. Never touches a connection that is not deleted. */
export async function purgeConnection(db: DataSource, connectionId: string): Promise<number> {
  const [connection] = (await db.query(`SELECT 1 FROM connections WHERE id = $1 AND deleted_at IS NOT NULL`, [connectionId])) as unknown[];
  if (!connection) return 0;
  await db.query(`DELETE FROM pairing_grants WHERE connection_id = $1`, [connectionId]);
  let removed = 0;
  for (;;) {
    const deleted = await rows(db, `DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE connection_id = $1 LIMIT $2) RETURNING 1`, [
      connectionId,
      BATCH,
    ]);
    removed += deleted.length;
    if (deleted.length < BATCH) break;
  }
  await db.query(`DELETE FROM provider_callbacks WHERE connection_id = $1`, [connectionId]);
  await db.query(`WITH l AS (DELETE FROM group_lists WHERE connection_id = $1) DELETE FROM group_metadata WHERE connection_id = $1`, [connectionId]);
  // The engine wipes its session at delete; this catches a wipe that did not happen (engine down).
  await wipeSession(db, connectionId);
  return removed;
}
