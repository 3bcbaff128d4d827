// RabbitMQ (AMQP 0-9-1): a durable topic exchange, declared on every connect; each event is a
// persistent message with `message_id` = its id, the routing key its subject, on a confirm
// channel. A batch counts as published when the broker has confirmed every message of it. A lost
// connection or channel is dropped and opened again at the next batch. The client's module loads
// with the first connection: only a gateway with an AMQP sink needs it.
import type { ChannelModel, ConfirmChannel } from "amqplib";
import type { Logger } from "../../logger.js";
import type { SinkEvent, SinkPublisher } from "./sink.js";

const CONFIRM_TIMEOUT_MS = 10_000;

export interface AmqpSinkOptions {
  url: string;
  exchange: string;
  logger: Logger;
  /** How long the broker may take to confirm a batch before it counts as failed. */
  publishTimeoutMs?: number;
}

interface Open {
  connection: ChannelModel;
  channel: ConfirmChannel;
}

export class AmqpPublisher implements SinkPublisher {
  private opening: Promise<Open> | undefined;
  private current: Open | undefined;

  constructor(private readonly options: AmqpSinkOptions) {}

  async publish(events: readonly SinkEvent[]): Promise<void> {
    const open = await this.open();
    const { channel } = open;
    try {
      for (const e of events) {
        channel.publish(this.options.exchange, e.subject, Buffer.from(e.payload), {
          persistent: true,
          messageId: e.id,
          contentType: "application/json",
          timestamp: Math.floor(e.createdAt.getTime() / 1000),
        });
      }
      await withTimeout(channel.waitForConfirms(), this.options.publishTimeoutMs ?? CONFIRM_TIMEOUT_MS, "RabbitMQ did not confirm the batch in time");
    } catch (err) {
      // Whatever state the channel is in, the next batch starts on a fresh connection.
      this.drop(open);
      throw err;
    }
  }

  async close(): Promise<void> {
    const pending = this.opening;
    this.opening = undefined;
    this.current = undefined;
    if (!pending) return;
    try {
      await (await pending).connection.close();
    } catch {
      // never opened, or already closed
    }
  }

  private open(): Promise<Open> {
    if (!this.opening) {
      const attempt = this.connect();
      this.opening = attempt;
      attempt.catch(() => this.opening === attempt && (this.opening = undefined));
    }
    return this.opening;
  }

  private async connect(): Promise<Open> {
    const { connect } = await import("amqplib");
    const connection = await connect(this.options.url, { timeout: 5_000 });
    // Errors end in 'close'; a listener keeps an 'error' from being thrown as unhandled.
    connection.on("error", () => undefined);
    try {
      const channel = await connection.createConfirmChannel();
      channel.on("error", () => undefined);
      const open = { connection, channel };
      connection.on("close", () => this.forget(open));
      channel.on("close", () => this.drop(open));
      await channel.assertExchange(this.options.exchange, "topic", { durable: true });
      this.current = open;
      return open;
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** The next batch opens a new connection. */
  private forget(open: Open): void {
    if (this.current !== open) return;
    this.current = undefined;
    this.opening = undefined;
  }

  private drop(open: Open): void {
    this.forget(open);
    void open.connection.close().catch(() => undefined);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
