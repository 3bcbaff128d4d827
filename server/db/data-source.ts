import "reflect-metadata";
import { DataSource } from "typeorm";
import { ENTITIES, MIGRATIONS } from "./schema.js";
import { EMBEDDED_MAX_CONNECTIONS } from "./embedded.js";

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
    // The embedded server drops connections beyond its limit; keep headroom for Agenda's own pool.
    extra: { max: embedded ? EMBEDDED_MAX_CONNECTIONS - 4 : 20, application_name: "svc-gateway" },
    logging: false,
  });
}
