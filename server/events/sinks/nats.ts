// NATS JetStream: the stream is created when missing (subjects `<prefix>.>`, file storage, a
// two-minute duplicate window), and each event is published with `Nats-Msg-Id` = its id, so a
// batch published again after a failure is stored once. A batch is sent without waiting between
// messages (one TCP connection keeps their order) and counts as published when every PubAck came.
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, JetStreamApiError, JetStreamApiCodes, type JetStreamClient } from "@nats-io/jetstream";
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

export class NatsPublisher implements SinkPublisher {
  private connecting: Promise<{ nc: NatsConnection; js: JetStreamClient }> | undefined;

  constructor(private readonly options: NatsSinkOptions) {}

  async publish(events: readonly SinkEvent[]): Promise<void> {
    const { js } = await this.connection();
    const acks = events.map((e) => js.publish(e.subject, e.payload, { msgID: e.id, timeout: this.options.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS }));
    // Every promise is awaited (none left to reject unobserved); the first failure fails the batch.
    const results = await Promise.allSettled(acks);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
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

  /** One connection, reconnecting by itself; made again only if it closed for good. */
  private connection(): Promise<{ nc: NatsConnection; js: JetStreamClient }> {
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

  private async open(): Promise<{ nc: NatsConnection; js: JetStreamClient }> {
    const { url, stream, subjectPrefix } = this.options;
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
      return { nc, js: jetstream(nc) };
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }
}
