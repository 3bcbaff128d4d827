// Embedded PostgreSQL for development and tests without a server: PGlite (PostgreSQL compiled to
// WebAssembly) behind pglite-socket, so the ordinary `pg` driver reaches it like any server.
// It is one backend: transactions run one at a time, and LISTEN/NOTIFY does not cross the socket.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export const EMBEDDED_MAX_CONNECTIONS = 16;

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/** `dataDir` undefined keeps the database in memory (tests). */
export async function startEmbeddedPostgres(dataDir: string | undefined): Promise<EmbeddedPostgres> {
  let db: PGlite;
  if (dataDir) {
    const dir = join(dataDir, "pgdata");
    mkdirSync(dir, { recursive: true });
    db = await PGlite.create(dir);
  } else {
    db = await PGlite.create();
  }
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: EMBEDDED_MAX_CONNECTIONS });
  await server.start();
  const address = server.getServerConn(); // "127.0.0.1:port"
  return {
    url: `postgres://postgres@${address}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
