// The brokers' sinks of the event outbox, as configured (EVENTS_NATS_URL, EVENTS_AMQP_URL): each
// its own loop, so a broker that is down or slow holds up only its own sink, never sends,
// webhooks or the other broker. Started and stopped with the gateway's other loops.
import { Counter, Gauge } from "prom-client";
import type { DataSource } from "typeorm";
import type { DatabaseListener } from "../../db/listener.js";
import type { EventsConfig } from "../../config.js";
import { rows } from "../../db/rows.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../ops/metrics.js";
import { EVENTS_CHANNEL } from "../../webhooks/fanout.js";
import { AmqpPublisher } from "./amqp.js";
import { NatsPublisher } from "./nats.js";
import { EventSink } from "./sink.js";

export interface EventSinks {
  readonly sinks: readonly EventSink[];
  start(): void;
  stop(): Promise<void>;
  /** An event was recorded (its statement's notification): look now rather than at the next poll. */
  wake(): void;
}

export interface EventSinksDeps {
  config: { events: EventsConfig };
  db: DataSource;
  logger: Logger;
  metrics: Metrics;
  /** The process's LISTEN connection: every statement recording events wakes the sinks (none on the embedded database). */
  listener?: DatabaseListener;
  /** Tests: smaller batches, shorter idle waits and leases. */
  tuning?: { batch?: number; idleMs?: number; leaseSeconds?: number; publishTimeoutMs?: number };
}

/** How far the lag gauge counts: past this many waiting events it reads this many. */
const LAG_COUNT_CAP = 1_000_000;

export function createEventSinks(deps: EventSinksDeps): EventSinks {
  const { config, db, logger, metrics } = deps;
  const events = config.events;
  // Labelled by broker kind only (nats, amqp): never a workspace or connection.
  const published = new Counter({ name: "svc_event_sink_published_total", help: "Events published and acknowledged, by broker", labelNames: ["sink"] as const, registers: [metrics.registry] });
  const failures = new Counter({ name: "svc_event_sink_failures_total", help: "Batches a broker did not take (down, slow, refused), by broker", labelNames: ["sink"] as const, registers: [metrics.registry] });
  const sinks: { kind: string; sink: EventSink }[] = [];
  const add = (kind: string, name: string, publisher: NatsPublisher | AmqpPublisher) => {
    const counters = { published: (n: number) => published.inc({ sink: kind }, n), failed: () => failures.inc({ sink: kind }) };
    sinks.push({ kind, sink: new EventSink({ name, subjectPrefix: events.subjectPrefix, db, publisher, logger, counters, batch: deps.tuning?.batch, idleMs: deps.tuning?.idleMs, leaseSeconds: deps.tuning?.leaseSeconds }) });
    published.inc({ sink: kind }, 0);
    failures.inc({ sink: kind }, 0);
  };
  if (events.natsUrl) add("nats", `nats:${events.natsStream}`, new NatsPublisher({ url: events.natsUrl, stream: events.natsStream, subjectPrefix: events.subjectPrefix, logger, publishTimeoutMs: deps.tuning?.publishTimeoutMs }));
  if (events.amqpUrl) add("amqp", `amqp:${events.amqpExchange}`, new AmqpPublisher({ url: events.amqpUrl, exchange: events.amqpExchange, logger, publishTimeoutMs: deps.tuning?.publishTimeoutMs }));

  if (sinks.length > 0) {
    const lag = async () =>
      rows<{ name: string; waiting: number; oldest_s: number | null }>(
        db,
        `SELECT s.name,
                (SELECT count(*)::int FROM (SELECT 1 FROM events e WHERE (e.tx, e.id) > (s.tx, s.event_id) LIMIT ${LAG_COUNT_CAP}) w) AS waiting,
                (SELECT extract(epoch FROM now() - e.created_at)::float8 FROM events e WHERE (e.tx, e.id) > (s.tx, s.event_id) ORDER BY e.tx, e.id LIMIT 1) AS oldest_s
           FROM event_sinks s WHERE s.name = ANY($1)`,
        [sinks.map((s) => s.sink.name)],
      );
    const kindOf = (name: string) => sinks.find((s) => s.sink.name === name)?.kind ?? "unknown";
    const waiting: Gauge<"sink"> = new Gauge({
      name: "svc_event_sink_lag_events",
      help: "Events recorded and not yet published, by broker",
      labelNames: ["sink"] as const,
      registers: [metrics.registry],
      collect: async () => {
        for (const r of await lag()) {
          waiting.set({ sink: kindOf(r.name) }, r.waiting);
          seconds.set({ sink: kindOf(r.name) }, Math.max(0, r.oldest_s ?? 0));
        }
      },
    });
    const seconds = new Gauge({ name: "svc_event_sink_lag_seconds", help: "Age of the oldest event not yet published (0 when none waits), by broker", labelNames: ["sink"] as const, registers: [metrics.registry] });
  }

  deps.listener?.on(EVENTS_CHANNEL, () => {
    for (const s of sinks) s.sink.wake();
  });

  return {
    sinks: sinks.map((s) => s.sink),
    start() {
      for (const s of sinks) s.sink.start();
    },
    async stop() {
      await Promise.all(sinks.map((s) => s.sink.stop()));
    },
    wake() {
      for (const s of sinks) s.sink.wake();
    },
  };
}
