import "reflect-metadata";
import { DataSource } from "typeorm";
import { ENTITIES, MIGRATIONS } from "./schema.js";

export interface DatabaseOptions {
  url: string;
  embedded: boolean;
  /** Told about errors of idle pooled connections (the server went away); the pool replaces them. */
  onPoolError?: (err: Error) => void;
}

/**
 * Bounds on waiting for the database, so that a request during an outage gets its 503 instead of
 * hanging: a new connection (or a free pooled one) within 5 s, and TCP keepalive so that a
 * connection to a server that vanished without a reset is found dead.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Schema changes only through migrations, run on start; never `synchronize`. */
export function createDataSource({ url, embedded, onPoolError }: DatabaseOptions): DataSource {
  return new DataSource({
    type: "postgres",
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: false,
    synchronize: false,
    migrationsTransactionMode: "each",
    // The embedded server runs one backend: more connections only queue, so keep the pool small
    // (and well under its connection limit, which Agenda's pool and other processes share).
    extra: { max: embedded ? 8 : 20, application_name: "svc-gateway", keepAlive: true, keepAliveInitialDelayMillis: 10_000 },
    connectTimeoutMS: CONNECT_TIMEOUT_MS,
    // Without a listener an idle connection's error would end the process; pg-pool drops the
    // broken connection and opens a new one on the next checkout.
    poolErrorHandler: onPoolError ?? (() => undefined),
    logging: false,
  });
}
