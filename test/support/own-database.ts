// A database for one test file alone, so that the run's own gateway neither helps nor hinders:
// a scratch database on the run's PostgreSQL, or a second embedded server.
import { createScratchDatabase } from "../setup.js";
import { waitFor } from "./wait.js";

export interface OwnDatabase {
  url: string;
  close(): Promise<void>;
}

/**
 * Retries what fails while the shared PostgreSQL server is full ("too many clients": other runs
 * on the same server), so that a file's own connections do not fail for that.
 */
export function patiently<T>(fn: () => Promise<T>): Promise<T> {
  return waitFor(fn, () => true, 30_000, 500);
}

export async function ownDatabase(): Promise<OwnDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const scratch = await patiently(() => createScratchDatabase(serverUrl));
    return { url: scratch.url, close: () => patiently(scratch.drop) };
  }
  const { startEmbeddedPostgres } = await import("../../server/db/embedded.js");
  const embedded = await startEmbeddedPostgres(undefined);
  return { url: embedded.url, close: () => embedded.stop() };
}
