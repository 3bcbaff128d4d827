// NATS JetStream: the stream is created when missing (subjects `<prefix>.>`, file storage, a
// two-minute duplicate window), and each event is published with `Nats-Msg-Id` = its id, so a
// batch published again after a failure is stored once. A batch is sent without waiting between
// messages (one TCP connection keeps their order) and counts as published when every PubAck came.
//
// PubAcks come back on one reply subscription of the connection, matched by a token in each
// message's reply subject, under one timer per batch: the client's `js.publish` makes a request
// (and a timer) per message, which published about a third as many events a second here
// (docs/performance.md, "Event sinks").
//
// The client's modules load with the first connection: only a gateway with a NATS sink needs them.
import type { MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";
import type { SinkEvent, SinkPublisher } from "./sink.js";

const PUBLISH_TIMEOUT_MS = 10_000;
const DUPLICATE_WINDOW_MS = 120_000;

export interface NatsSinkOptions {
  url: string;
  stream: string;
  subjectPrefix: string;
  logger: Logger;
  /** How long a PubAck may take before the batch counts as failed. */
  publishTimeoutMs?: number;
}

interface Open {
  nc: NatsConnection;
  /** Where PubAcks arrive: `<inbox>.<token>`. */
  inbox: string;
  replies: Subscription;
  /** The client's headers constructor. */
  headers: () => MsgHdrs;
}

/** A PubAck: the stream and sequence stored (`duplicate` when the id was within the window), or an error. */
interface PubAck {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code: number; err_code?: number; description: string };
}

export class NatsPublisher implements SinkPublisher {
  private connecting: Promise<Open> | undefined;
  /** Tokens of the messages of the batch in flight, each to its PubAck's handler. */
  private readonly awaiting = new Map<string, (ack: PubAck) => void>();
  private token = 0;

  constructor(private readonly options: NatsSinkOptions) {}

  async publish(events: readonly SinkEvent[]): Promise<void> {
    const { nc, inbox, headers } = await this.connection();
    const tokens: string[] = [];
    const acks = events.map((e) => {
      const token = (this.token++).toString(36);
      tokens.push(token);
      const acked = new Promise<PubAck>((resolve) => this.awaiting.set(token, resolve));
      const h = headers();
      h.set("Nats-Msg-Id", e.id);
      nc.publish(e.subject, e.payload, { headers: h, reply: `${inbox}.${token}` });
      return acked;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = this.options.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`JetStream did not acknowledge the batch within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const answers = await Promise.race([Promise.all(acks), timedOut]);
      const refused = answers.find((a) => a.error || a.seq === undefined);
      if (refused) throw new Error(`JetStream refused an event: ${refused.error?.description ?? "no sequence in its PubAck"}`);
    } finally {
      clearTimeout(timer);
      for (const t of tokens) this.awaiting.delete(t);
    }
  }

  async close(): Promise<void> {
    const pending = this.connecting;
    this.connecting = undefined;
    if (!pending) return;
    try {
      await (await pending).nc.drain();
    } catch {
      // never connected, or already closed
    }
  }

  /** One connection, reconnecting by itself (its reply subscription too); made again only if it closed for good. */
  private connection(): Promise<Open> {
    if (!this.connecting) {
      const attempt = this.open();
      this.connecting = attempt;
      attempt.then(
        ({ nc }) => void nc.closed().then(() => this.connecting === attempt && (this.connecting = undefined)),
        () => this.connecting === attempt && (this.connecting = undefined),
      );
    }
    return this.connecting;
  }

  private async open(): Promise<Open> {
    const { url, stream, subjectPrefix } = this.options;
    const [{ connect, createInbox, headers, nanos }, { jetstreamManager, JetStreamApiError, JetStreamApiCodes }] = await Promise.all([
      import("@nats-io/transport-node"),
      import("@nats-io/jetstream"),
    ]);
    const nc = await connect({ servers: url, name: "svc-gateway events", maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 5_000 });
    try {
      const jsm = await jetstreamManager(nc);
      try {
        await jsm.streams.info(stream);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
        await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`], duplicate_window: nanos(DUPLICATE_WINDOW_MS) });
        this.options.logger.info({ stream }, "event sink: created the JetStream stream");
      }
      const inbox = createInbox();
      const replies = nc.subscribe(`${inbox}.*`, {
        callback: (err, msg) => {
          if (err) return;
          const token = msg.subject.slice(inbox.length + 1);
          let ack: PubAck;
          try {
            ack = msg.json<PubAck>();
          } catch {
            ack = { error: { code: 0, description: "unreadable PubAck" } };
          }
          this.awaiting.get(token)?.(ack);
        },
      });
      return { nc, inbox, replies, headers };
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }
}
