import "reflect-metadata";
import { DataSource } from "typeorm";
import { ENTITIES, MIGRATIONS } from "./schema.js";

export interface DatabaseOptions {
  url: string;
  embedded: boolean;
}

/** Schema changes only through migrations, run on start; never `synchronize`. */
export function createDataSource({ url, embedded }: DatabaseOptions): DataSource {
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
    extra: { max: embedded ? 8 : 20, application_name: "svc-gateway" },
    logging: false,
  });
}
