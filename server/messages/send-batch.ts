// Sends, written together. Every send that reaches the database in the same turn of the event
// loop joins one statement (store/accept.ts, SEND_SQL): under load, one round trip, one plan and one commit serve
// many sends, and each is still decided on its own — its own connection, Idempotency-Key record,
// lock and usage — and written only if every rule holds for it. At most MAX_IN_FLIGHT statements
// run at once (each on its own pooled connection); sends arriving meanwhile join the next one.
import type { DataSource } from "typeorm";
import { isDatabaseUnavailable } from "../db/availability.js";
import { isUniqueViolation } from "../db/unique-violation.js";
import { writeSends, writtenSends, type SendInput, type SendOutcome } from "./store/accept.js";

export type { SendInput, SendOutcome };

/** Most sends in one statement. */
const MAX_BATCH = 64;
/** Most statements in flight at once (each holds one pooled connection until it commits). */
const MAX_IN_FLIGHT = 4;

interface Waiting {
  input: SendInput;
  resolve: (outcome: SendOutcome) => void;
  reject: (err: unknown) => void;
}

export class SendBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly db: DataSource) {}

  send(input: SendInput): Promise<SendOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    // After the current turn: the requests parsed in it join the same statement.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length && this.inFlight < MAX_IN_FLIGHT) {
      const batch: Waiting[] = [];
      const keys = new Set<string>();
      const rest: Waiting[] = [];
      for (const w of this.queue) {
        const key = w.input.idempotencyKey === null ? null : `${w.input.workspaceId}\n${w.input.idempotencyKey}`;
        // The same key twice in one statement would hold its lock twice: the second waits.
        if (batch.length >= MAX_BATCH || (key !== null && keys.has(key))) rest.push(w);
        else {
          batch.push(w);
          if (key !== null) keys.add(key);
        }
      }
      this.queue = rest;
      this.inFlight++;
      void this.run(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length) this.schedule();
      });
    }
  }

  private async run(batch: Waiting[]): Promise<void> {
    try {
      const outcomes = await this.write(batch.map((w) => w.input));
      batch.forEach((w, i) => w.resolve(outcomes[i]!));
    } catch (err) {
      // A lost connection loses the statement's answer, not necessarily the statement: it may
      // have committed. What it wrote is found by the sends' own ids and answered as accepted.
      let written = new Map<string, SendOutcome>();
      if (isDatabaseUnavailable(err)) {
        try {
          written = await writtenSends(this.db, batch.map((w) => w.input));
        } catch (unknown) {
          // The answer cannot be known: 503 with Retry-After (http/errors.ts); a retry with the same
          // Idempotency-Key replays what was accepted, or writes it once.
          return batch.forEach((w) => w.reject(unknown));
        }
      } else if (batch.length === 1) return batch[0]!.reject(err);
      // Whatever failed the statement fails only the send it came from.
      for (const w of batch) {
        const outcome = written.get(w.input.id);
        if (outcome) w.resolve(outcome);
        else await this.writeAlone(w.input).then(w.resolve, w.reject);
      }
    }
  }

  /**
   * One send again, under its own id, after its statement failed. Should that statement commit
   * late (the server had not finished it when its connection was lost), this one stops at a unique
   * key of what it writes (the message's id, its hand-off's, its event's: which comes first is
   * PostgreSQL's choice) and finds the row; a lost answer again is looked up the same way.
   */
  private async writeAlone(input: SendInput): Promise<SendOutcome> {
    try {
      return (await this.write([input]))[0]!;
    } catch (err) {
      if (!isDatabaseUnavailable(err) && !isUniqueViolation(err)) throw err;
      const outcome = (await writtenSends(this.db, [input])).get(input.id);
      if (outcome) return outcome;
      throw err;
    }
  }

  private write(inputs: SendInput[]): Promise<SendOutcome[]> {
    return writeSends(this.db, inputs);
  }
}
