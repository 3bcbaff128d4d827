// The machine's real brokers for the event sinks' tests: NATS with JetStream and RabbitMQ, each
// test with stream, subject prefix and exchange names of its own so parallel runs never meet.
// Consumers here read what the gateway published, as an operator's consumer would.
import { randomBytes } from "node:crypto";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as amqpConnect } from "amqplib";

export const NATS_URL = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
export const AMQP_URL = process.env.TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";

/** Names of this test's own: a JetStream stream, a subject prefix and an exchange. */
export function brokerNames() {
  const tag = randomBytes(5).toString("hex");
  return { natsStream: `TEST_EVENTS_${tag}`, subjectPrefix: `test.${tag}`, amqpExchange: `test.events.${tag}` };
}

export interface Received {
  id: string;
  subject: string;
  payload: Record<string, unknown>;
}

/** Every message in the stream, in stream order (empty when the stream does not exist yet). */
export async function readStream(stream: string): Promise<(Received & { seq: number })[]> {
  const nc = await natsConnect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream).catch(() => null);
    const count = info?.state.messages ?? 0;
    if (count === 0) return [];
    const consumer = await jetstream(nc).consumers.get(stream);
    const out: (Received & { seq: number })[] = [];
    while (out.length < count) {
      const batch = await consumer.fetch({ max_messages: Math.min(1000, count - out.length), expires: 2_000 });
      for await (const m of batch) out.push({ id: m.headers?.get("Nats-Msg-Id") ?? "", subject: m.subject, payload: m.json(), seq: m.seq });
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Stream config as the server has it, or null. */
export async function streamInfo(stream: string) {
  const nc = await natsConnect({ servers: NATS_URL });
  try {
    return await (await jetstreamManager(nc)).streams.info(stream).catch(() => null);
  } finally {
    await nc.close();
  }
}

export async function deleteStream(stream: string): Promise<void> {
  const nc = await natsConnect({ servers: NATS_URL });
  try {
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
  } finally {
    await nc.close();
  }
}

/**
 * A queue of the test's own bound to `exchange` with `#`, declared before anything is published
 * (a topic exchange drops what no queue is bound to); collects what arrives.
 */
export async function amqpQueue(exchange: string) {
  const connection = await amqpConnect(AMQP_URL);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, "topic", { durable: true });
  const { queue } = await channel.assertQueue("", { exclusive: true, autoDelete: true });
  await channel.bindQueue(queue, exchange, "#");
  const messages: (Received & { persistent: boolean; contentType: string | undefined; receivedAt: number })[] = [];
  await channel.consume(
    queue,
    (m) => {
      if (!m) return;
      messages.push({
        id: String(m.properties.messageId),
        subject: m.fields.routingKey,
        payload: JSON.parse(m.content.toString("utf8")) as Record<string, unknown>,
        persistent: m.properties.deliveryMode === 2,
        contentType: m.properties.contentType as string | undefined,
        receivedAt: Date.now(),
      });
    },
    { noAck: true },
  );
  return {
    messages,
    async close() {
      await channel.deleteExchange(exchange).catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
  };
}
