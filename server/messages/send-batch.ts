// Sends, written together. Every send that reaches the database in the same turn of the event
// loop joins one statement (store/accept.ts, SEND_SQL): under load, one round trip, one plan and one commit serve
// many sends, and each is still decided on its own — its own connection, Idempotency-Key record,
// lock and usage — and written only if every rule holds for it. At most MAX_IN_FLIGHT statements
// run at once (each on its own pooled connection); sends arriving meanwhile join the next one.
import type { DataSource } from "typeorm";
import { writeSends, type SendInput, type SendOutcome } from "./store/accept.js";

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
      if (batch.length === 1) return batch[0]!.reject(err);
      // Whatever failed the statement fails only the send it came from.
      for (const w of batch) {
        await this.write([w.input]).then((o) => w.resolve(o[0]!), w.reject);
      }
    }
  }

  private write(inputs: SendInput[]): Promise<SendOutcome[]> {
    return writeSends(this.db, inputs);
  }
}
