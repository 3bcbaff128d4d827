// Agenda runs everything that happens later. Its PostgreSQL backend shares our database; a
// deployment with MongoDB can point JOBS_MONGODB_URL at it instead. Each job is defined in its own
// file, validates its payload and is idempotent: Agenda delivers at least once.
import { Agenda } from "agenda";
import { PostgresBackend } from "@agendajs/postgres-backend";
import type { Logger } from "../server/logger.js";

export interface JobRunnerOptions {
  databaseUrl: string;
  /** The embedded database cannot carry LISTEN/NOTIFY, so Agenda polls there. */
  embedded: boolean;
  mongoUrl?: string | undefined;
  logger: Logger;
  processEveryMs?: number;
}

export interface JobDefinition<T = unknown> {
  name: string;
  concurrency?: number;
  lockLifetimeMs?: number;
  /** Delete a one-time job's row once it succeeded (jobs created per item, e.g. webhook retries). */
  removeOnComplete?: boolean;
  run(data: T): Promise<void>;
}

export class JobRunner {
  readonly agenda: Agenda;
  private started = false;

  private constructor(agenda: Agenda, private readonly logger: Logger) {
    this.agenda = agenda;
  }

  static async create(options: JobRunnerOptions): Promise<JobRunner> {
    const backend = options.mongoUrl ? await mongoBackend(options.mongoUrl) : new PostgresBackend({
      connectionString: options.databaseUrl,
      poolConfig: { connectionString: options.databaseUrl, max: 3 },
      disableNotifications: options.embedded,
    });
    const agenda = new Agenda({
      backend,
      processEvery: options.processEveryMs ?? (options.embedded ? 500 : 2000),
      defaultConcurrency: 10,
      maxConcurrency: 40,
    } as ConstructorParameters<typeof Agenda>[0]);
    agenda.on("error", (err: unknown) => options.logger.error({ err }, "job runner error"));
    return new JobRunner(agenda, options.logger);
  }

  define<T>(job: JobDefinition<T>): void {
    this.agenda.define<T>(
      job.name,
      async (j) => {
        try {
          await job.run(j.attrs.data);
        } catch (err) {
          this.logger.error({ err, job: job.name }, "job failed");
          throw err;
        }
      },
      { concurrency: job.concurrency ?? 5, lockLifetime: job.lockLifetimeMs ?? 60_000, removeOnComplete: job.removeOnComplete ?? false },
    );
  }

  async start(): Promise<void> {
    await this.agenda.start();
    this.started = true;
  }

  get ready(): boolean {
    return this.started;
  }

  /** Finishes the jobs in flight (up to `timeoutMs`), then releases the rest for another process. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.agenda.drain({ timeout: timeoutMs } as Parameters<Agenda["drain"]>[0]);
    await this.agenda.stop(true);
  }
}

async function mongoBackend(url: string) {
  const { MongoBackend } = await import("@agendajs/mongo-backend");
  return new MongoBackend({ address: url });
}
