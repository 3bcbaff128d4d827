// A connection's Baileys auth state (credentials and signal keys) in PostgreSQL, never on disk:
// the library's file-based helper is, by its own README, not for production. Every value is sealed
// under SECRET_KEY; a key update (the library's `keys.set`) is written in one transaction, so a
// crash never leaves half of a ratchet step. Removed on logout and on connection delete.
import { BufferJSON, initAuthCreds, type AuthenticationCreds, type AuthenticationState, type SignalDataSet, type SignalDataTypeMap } from "@whiskeysockets/baileys";
import type { DataSource, EntityManager } from "typeorm";
import { rows } from "../../db/rows.js";
import { decrypt, encrypt } from "../../secrets.js";

/** The `kind` of the credentials row; signal keys use their library type as kind. */
const CREDS = "creds";

export interface StoredAuth {
  state: AuthenticationState;
  /** Writes the current credentials (on the socket's `creds.update`). */
  saveCreds(): Promise<void>;
  /** True when the credentials came from the database (a linked or half-linked session). */
  restored: boolean;
}

function seal(key: Buffer, value: unknown): string {
  return encrypt(key, JSON.stringify(value, BufferJSON.replacer));
}

function unseal<T>(key: Buffer, sealed: string): T {
  return JSON.parse(decrypt(key, sealed), BufferJSON.reviver) as T;
}

/** Loads (or begins) the auth state of `connectionId`. */
export async function loadAuthState(db: DataSource, secretKey: Buffer, connectionId: string): Promise<StoredAuth> {
  const [row] = await rows<{ value_sealed: string }>(db, `SELECT value_sealed FROM baileys_auth WHERE connection_id = $1 AND kind = $2 AND key_id = ''`, [
    connectionId,
    CREDS,
  ]);
  const creds: AuthenticationCreds = row ? unseal(secretKey, row.value_sealed) : initAuthCreds();
  const state: AuthenticationState = {
    creds,
    keys: {
      async get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
        const found = await rows<{ key_id: string; value_sealed: string }>(
          db,
          `SELECT key_id, value_sealed FROM baileys_auth WHERE connection_id = $1 AND kind = $2 AND key_id = ANY($3::text[])`,
          [connectionId, type, ids],
        );
        const out: Record<string, SignalDataTypeMap[T]> = {};
        for (const r of found) out[r.key_id] = unseal(secretKey, r.value_sealed);
        return out;
      },
      async set(data: SignalDataSet) {
        await db.transaction((em) => writeKeys(em, secretKey, connectionId, data));
      },
    },
  };
  // Saves run one after another, each writing the credentials as they are then: the last one
  // written is always the newest (two concurrent upserts could otherwise commit out of order).
  let saving = Promise.resolve();
  const write = async () => {
    await db.query(
      `INSERT INTO baileys_auth (connection_id, kind, key_id, value_sealed) VALUES ($1, $2, '', $3)
       ON CONFLICT (connection_id, kind, key_id) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, updated_at = now()`,
      [connectionId, CREDS, seal(secretKey, state.creds)],
    );
  };
  return {
    state,
    restored: Boolean(row),
    saveCreds() {
      const next = saving.then(write);
      saving = next.catch(() => undefined);
      return next;
    },
  };
}

/** One key update: upserts and deletions (a null value) of every type, in the caller's transaction. */
async function writeKeys(em: EntityManager, secretKey: Buffer, connectionId: string, data: SignalDataSet): Promise<void> {
  const kinds: string[] = [];
  const ids: string[] = [];
  const values: string[] = [];
  const gone: { kind: string; id: string }[] = [];
  for (const [kind, entries] of Object.entries(data)) {
    for (const [id, value] of Object.entries(entries ?? {})) {
      if (value === null || value === undefined) gone.push({ kind, id });
      else {
        kinds.push(kind);
        ids.push(id);
        values.push(seal(secretKey, value));
      }
    }
  }
  if (kinds.length) {
    await em.query(
      `INSERT INTO baileys_auth (connection_id, kind, key_id, value_sealed)
       SELECT $1, k, i, v FROM unnest($2::text[], $3::text[], $4::text[]) AS x(k, i, v)
       ON CONFLICT (connection_id, kind, key_id) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, updated_at = now()`,
      [connectionId, kinds, ids, values],
    );
  }
  if (gone.length) {
    await em.query(`DELETE FROM baileys_auth WHERE connection_id = $1 AND (kind, key_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, [
      connectionId,
      gone.map((g) => g.kind),
      gone.map((g) => g.id),
    ]);
  }
}

/**
 * Forgets everything the engine kept for a connection: auth state, stored messages, the LID map,
 * sends waiting for the holder, remembered number checks (another number may link next).
 * After this the number must be paired again.
 */
export async function wipeSession(db: DataSource | EntityManager, connectionId: string): Promise<void> {
  await db.query(
    `WITH a AS (DELETE FROM baileys_auth WHERE connection_id = $1), m AS (DELETE FROM baileys_messages WHERE connection_id = $1),
          o AS (DELETE FROM baileys_outbox WHERE connection_id = $1), n AS (DELETE FROM baileys_number_checks WHERE connection_id = $1)
     DELETE FROM baileys_lid_map WHERE connection_id = $1`,
    [connectionId],
  );
}
