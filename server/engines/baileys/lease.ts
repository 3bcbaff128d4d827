// Which gateway process holds which connection's socket: a lease row per connection in
// PostgreSQL. Two sockets open for one number get the device logged out, so a holder closes its
// socket before its lease can expire unrenewed (when it cannot renew, it gives the socket up), and
// another process takes a lease over only once it has expired: a holder that dies is replaced
// after at most one lease period plus one poll. The sockets are shared out fairly: each process
// renews a row of its own in baileys_processes with its leases, and holds no more than its share,
// ceil(connections / live processes) (census()); a process over it closes the surplus sockets
// and then releases their leases, so that another takes them up without two sockets ever open.
import { hostname } from "node:os";
import type { DataSource } from "typeorm";
import { rows } from "../../db/rows.js";
import { randomToken } from "../../secrets.js";

/**
 * A holder keeps a session until its connection is suspended or deleted (a pairing session may
 * still read `created` or `disconnected` for a moment: its state moves after the first QR).
 * Only `connected` ones are taken up when free (orphans).
 */
const DROPPED_STATES = ["suspended", "deleted"];

/**
 * Connections (`c`, joined to their lease `l`) that want a socket and that no live process holds:
 * linked ones, and those whose socket the network refused only for its client version (they are
 * linked, and read `disconnected` only until a socket presents a current version); not those
 * replaced elsewhere. $1: the engine.
 */
const ORPHAN = `c.transport = $1 AND c.deleted_at IS NULL AND (l.connection_id IS NULL OR l.expires_at < now())
  AND (c.state = 'connected' OR (c.state = 'disconnected' AND c.linked AND c.state_detail = 'client_version_refused'))`;

/** What this process may hold: the live processes of the engine, and the sockets to share out between them. */
export interface Census {
  processes: number;
  /** Live leases plus orphans. */
  sockets: number;
  /** ceil(sockets / processes): the most a process holds. */
  share: number;
}

/** A pairing asked of the holder by another process: `phone` for a code, null for a QR. */
export interface PairingAsk {
  id: string;
  phone: string | null;
}

export class Leases {
  /** This process, as written in the rows it holds. */
  readonly holder = `${hostname()}:${process.pid}:${randomToken(6)}`;

  constructor(
    private readonly db: DataSource,
    readonly ttlSeconds: number,
  ) {}

  /** Takes the lease when it is free, expired or already ours; false when another holds it. */
  async acquire(connectionId: string): Promise<boolean> {
    return (await this.claim(connectionId)) !== null;
  }

  /**
   * acquire(), saying how: `free` (no row: nobody held it, or its holder dropped it), `taken`
   * (an expired row, or our own, taken over); null when another holds it.
   */
  async claim(connectionId: string): Promise<"free" | "taken" | null> {
    const [taken] = await rows<{ fresh: boolean }>(
      this.db,
      `INSERT INTO baileys_leases (connection_id, holder, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (connection_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE baileys_leases.holder = EXCLUDED.holder OR baileys_leases.expires_at < now()
       RETURNING (xmax = 0) AS fresh`,
      [connectionId, this.holder, this.ttlSeconds],
    );
    return taken ? (taken.fresh ? "free" : "taken") : null;
  }

  /**
   * Extends the leases of `held` that are still ours and whose connection still wants a session;
   * answers for each: keep it, drop it (lease lost, or the connection was suspended:
   * the row is removed so that no other process takes it up), or log out (the connection was deleted).
   */
  async renew(held: string[]): Promise<Map<string, "keep" | "drop" | "logout">> {
    const out = new Map<string, "keep" | "drop" | "logout">(held.map((id) => [id, "drop"]));
    if (!held.length) return out;
    // A renewal that cannot finish within a quarter lease is given up by the server (a lock, a
    // stalled server): the caller then closes its sockets in time (engine.ts).
    const found = await this.db.transaction(async (em) => {
      await em.query(`SELECT set_config('statement_timeout', $1, true)`, [String(Math.floor((this.ttlSeconds * 1000) / 4))]);
      return rows<{ connection_id: string; deleted: boolean; kept: boolean }>(
        em,
        `WITH c AS (
           SELECT l.connection_id, c.deleted_at IS NOT NULL AS deleted, (c.state <> ALL($4::text[]) AND c.deleted_at IS NULL) AS kept
             FROM baileys_leases l JOIN connections c ON c.id = l.connection_id
            WHERE l.holder = $1 AND l.connection_id = ANY($2::text[])
         ), renewed AS (
           UPDATE baileys_leases l SET expires_at = now() + make_interval(secs => $3)
             FROM c WHERE l.connection_id = c.connection_id AND c.kept AND l.holder = $1
         ), dropped AS (
           DELETE FROM baileys_leases l USING c WHERE l.connection_id = c.connection_id AND NOT c.kept AND l.holder = $1
         )
         SELECT * FROM c`,
        [this.holder, held, this.ttlSeconds, DROPPED_STATES],
      );
    });
    for (const r of found) out.set(r.connection_id, r.kept ? "keep" : r.deleted ? "logout" : "drop");
    return out;
  }

  /** Linked connections of the engine that no live process holds (ORPHAN): to take up. */
  async orphans(transport: string, limit: number): Promise<string[]> {
    const found = await rows<{ id: string }>(
      this.db,
      `SELECT c.id FROM connections c LEFT JOIN baileys_leases l ON l.connection_id = c.id WHERE ${ORPHAN} ORDER BY c.id LIMIT $2`,
      [transport, limit],
    );
    return found.map((r) => r.id);
  }

  /**
   * Says this process is alive (its row in baileys_processes, renewed for one lease period) and
   * counts the live processes and the sockets to share. Rows of processes gone for a minute are removed.
   */
  async census(transport: string): Promise<Census> {
    const [row] = await rows<{ processes: number; sockets: number }>(
      this.db,
      `WITH beat AS (
         INSERT INTO baileys_processes (holder, expires_at) VALUES ($2, now() + make_interval(secs => $3))
         ON CONFLICT (holder) DO UPDATE SET expires_at = EXCLUDED.expires_at
       ), gone AS (
         DELETE FROM baileys_processes WHERE expires_at < now() - interval '1 minute'
       )
       SELECT 1 + (SELECT count(*) FROM baileys_processes WHERE expires_at > now() AND holder <> $2)::int AS processes,
              ((SELECT count(*) FROM baileys_leases WHERE expires_at > now())
               + (SELECT count(*) FROM connections c LEFT JOIN baileys_leases l ON l.connection_id = c.id WHERE ${ORPHAN}))::int AS sockets`,
      [transport, this.holder, this.ttlSeconds],
    );
    const { processes, sockets } = row!;
    return { processes, sockets, share: Math.ceil(sockets / processes) };
  }

  /** This process no longer runs the engine: not counted in the others' census from now on. */
  async leave(): Promise<void> {
    await this.db.query(`DELETE FROM baileys_processes WHERE holder = $1`, [this.holder]);
  }

  async release(connectionId: string): Promise<void> {
    await this.db.query(`DELETE FROM baileys_leases WHERE connection_id = $1 AND holder = $2`, [connectionId, this.holder]);
  }

  /** The pairing QR the holder's socket shows now (sealed), for a grant redeemed on any process. */
  async setQr(connectionId: string, sealed: string | null): Promise<void> {
    await this.db.query(`UPDATE baileys_leases SET qr_sealed = $3 WHERE connection_id = $1 AND holder = $2`, [connectionId, this.holder, sealed]);
  }

  async qr(connectionId: string): Promise<string | null> {
    const [row] = await rows<{ qr_sealed: string | null }>(this.db, `SELECT qr_sealed FROM baileys_leases WHERE connection_id = $1 AND expires_at > now()`, [connectionId]);
    return row?.qr_sealed ?? null;
  }

  /**
   * Asks the live holder of a connection's socket to start pairing (a fresh QR, or a code for
   * `phone`); false when nobody holds it. The holder takes the request at its next poll.
   */
  async askPairing(connectionId: string, request: PairingAsk): Promise<boolean> {
    const asked = await rows(
      this.db,
      `UPDATE baileys_leases SET pair_request = $2::jsonb, pair_answer = NULL WHERE connection_id = $1 AND expires_at > now() AND holder <> $3 RETURNING 1`,
      [connectionId, JSON.stringify(request), this.holder],
    );
    return asked.length > 0;
  }

  /** Pairings other processes asked of this one, each taken once. */
  async pairingAsks(): Promise<{ connectionId: string; request: PairingAsk }[]> {
    const asks = await rows<{ connection_id: string; pair_request: PairingAsk }>(
      this.db,
      `WITH asked AS (SELECT connection_id, pair_request FROM baileys_leases WHERE holder = $1 AND pair_request IS NOT NULL FOR UPDATE)
       UPDATE baileys_leases l SET pair_request = NULL FROM asked WHERE l.connection_id = asked.connection_id
       RETURNING l.connection_id, asked.pair_request`,
      [this.holder],
    );
    return asks.map((a) => ({ connectionId: a.connection_id, request: a.pair_request }));
  }

  /** The holder's answer to a pairing ask: the payload is the row's QR from now on. */
  async answerPairing(connectionId: string, id: string, ok: boolean): Promise<void> {
    await this.db.query(`UPDATE baileys_leases SET pair_answer = $3 WHERE connection_id = $1 AND holder = $2`, [connectionId, this.holder, ok ? id : `failed:${id}`]);
  }

  /** The answer to ask `id`: the sealed payload, "failed", or null while none came. */
  async pairingAnswer(connectionId: string, id: string): Promise<{ sealed: string } | "failed" | null> {
    const [row] = await rows<{ qr_sealed: string | null; pair_answer: string | null }>(this.db, `SELECT qr_sealed, pair_answer FROM baileys_leases WHERE connection_id = $1`, [connectionId]);
    if (row?.pair_answer === `failed:${id}`) return "failed";
    return row?.pair_answer === id && row.qr_sealed ? { sealed: row.qr_sealed } : null;
  }

  /** Who holds a connection, if anyone (a live lease). */
  async holderOf(connectionId: string): Promise<string | null> {
    const [row] = await rows<{ holder: string }>(this.db, `SELECT holder FROM baileys_leases WHERE connection_id = $1 AND expires_at > now()`, [connectionId]);
    return row?.holder ?? null;
  }
}
