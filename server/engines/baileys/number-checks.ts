// Number checks on a real number (docs/engines.md: cached a day, throttled): the network counts
// lookups against the number that makes them, so an answer is remembered a day per connection in
// PostgreSQL (any process answers from it, not only the socket's holder), and the holder asks the
// network at most once per NUMBER_CHECK_GAP_MS, the rest waiting their turn up to the check's
// timeout (then `checked: false`, as for a slow network).
import type { DataSource } from "typeorm";
import { rows } from "../../db/rows.js";

/** How long a check's answer is kept. */
export const NUMBER_CHECK_TTL_HOURS = 24;
/** The least time between two lookups one session makes on the network. */
export const NUMBER_CHECK_GAP_MS = 1_000;

export class NumberCheckCache {
  constructor(private readonly db: DataSource) {}

  /** The remembered answer (true/false) when younger than a day; null when there is none. */
  async get(connectionId: string, phone: string): Promise<boolean | null> {
    const [row] = await rows<{ on_network: boolean }>(
      this.db,
      `SELECT on_network FROM baileys_number_checks WHERE connection_id = $1 AND phone = $2 AND checked_at > now() - make_interval(hours => $3)`,
      [connectionId, phone, NUMBER_CHECK_TTL_HOURS],
    );
    return row ? row.on_network : null;
  }

  async remember(connectionId: string, phone: string, onNetwork: boolean): Promise<void> {
    await this.db.query(
      `INSERT INTO baileys_number_checks (connection_id, phone, on_network) VALUES ($1, $2, $3)
       ON CONFLICT (connection_id, phone) DO UPDATE SET on_network = EXCLUDED.on_network, checked_at = now()`,
      [connectionId, phone, onNetwork],
    );
  }
}

/** Turns for one session's lookups, at least `gapMs` apart; a turn further away than `withinMs` is refused. */
export class CheckThrottle {
  private nextAt = 0;

  constructor(private readonly gapMs = NUMBER_CHECK_GAP_MS) {}

  /** Waits for this lookup's turn; false (and no turn taken) when it would come later than `withinMs`. */
  async turn(withinMs: number): Promise<boolean> {
    const at = Math.max(Date.now(), this.nextAt);
    if (at - Date.now() > withinMs) return false;
    this.nextAt = at + this.gapMs;
    const wait = at - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return true;
  }
}
