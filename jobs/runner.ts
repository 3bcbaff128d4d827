// Agenda runs everything that happens later. Its PostgreSQL backend shares our database; a
// deployment with MongoDB can point JOBS_MONGODB_URL at it instead. Each job is defined in its own
// file, validates its payload and is idempotent: Agenda delivers at least once.
import { Agenda } from "agenda";
import { PostgresBackend } from "@agendajs/postgres-backend";
import pg from "pg";
import { CONNECT_TIMEOUT_MS } from "../server/db/data-source.js";
import { endpointOf, isDatabaseUnavailable, retryWhileUnavailable, waitForDependency } from "../server/db/availability.js";
import type { Logger } from "../server/logger.js";

export interface JobRunnerOptions {
  databaseUrl: string;
  /** Agenda's own LISTEN is not used on the embedded database: Agenda polls there. */
  embedded: boolean;
  mongoUrl?: string | undefined;
  logger: Logger;
  processEveryMs?: number;
  /** How long to wait for an unreachable backend at start (DATABASE_WAIT_S); 0: fail at once. */
  waitMs?: number;
}

/** Per attempt when waiting for MongoDB at start (the driver's default is 30 s). */
const MONGO_SELECTION_TIMEOUT_MS = 5_000;

export interface JobDefinition<T = unknown> {
  name: string;
  concurrency?: number;
  lockLifetimeMs?: number;
  /** Delete a one-time job's row once it succeeded (jobs created per item, e.g. webhook retries). */
  removeOnComplete?: boolean;
  /**
   * Renew the lock every third of its lifetime while the job runs: a job that may run longer than
   * its lock keeps it, and a process that dies gives it back within one short lifetime.
   */
  heartbeat?: boolean;
  run(data: T): Promise<void>;
}

/** How long a heartbeat job retries through a database outage (its lock is renewed meanwhile). */
const HEARTBEAT_RETRY_WINDOW_MS = 60_000;

export class JobRunner {
  readonly agenda: Agenda;
  private started = false;
  /** Jobs running in this process, from Agenda's `start` to its `complete` (emitted once the job is saved and unlocked). */
  private readonly running = new Set<object>();
  /**
   * Jobs this process locked that Agenda has neither finished nor given back, by id: whatever
   * path leaves one locked (Agenda's stop keeps the locks of jobs it was about to run), a pause
   * gives back those not running.
   */
  private readonly held = new Map<string, NonNullable<Parameters<JobRunner["agenda"]["db"]["unlockJobs"]>[0][number]>>();

  /** Whether this process takes jobs: false from the moment a pause begins. */
  private taking = false;
  /** Counts the pauses: a lock asked for before the current one began is given back when it lands. */
  private pauses = 0;
  /** Locks asked for and not yet landed (each gives its job back itself if a pause began meanwhile). */
  private readonly locking = new Set<Promise<unknown>>();

  private constructor(
    agenda: Agenda,
    private readonly logger: Logger,
    /** Closes the backend's connections: our pool under PostgreSQL (Agenda does not close a pool it was given), the client under MongoDB. */
    private readonly closeBackend: () => Promise<void>,
  ) {
    this.agenda = agenda;
    agenda.on("start", (job: object) => this.running.add(job));
    agenda.on("complete", (job: object) => {
      this.running.delete(job);
      this.held.delete(String((job as { attrs: { _id?: unknown } }).attrs._id));
    });
    this.guardLocks();
  }

  /**
   * Agenda's stop() unlocks the jobs it holds when it is called, but a lock it asked for just
   * before (its queue filling runs on, and keeps asking while it finds jobs) lands afterwards and
   * is never given back: the job stays locked for its whole lock lifetime, a recurring lane
   * included. Every lock goes through here: none is taken while paused, and one that lands after a
   * pause began is given back at once.
   */
  private guardLocks(): void {
    const repository = this.agenda.db;
    const getNextJobToRun = repository.getNextJobToRun.bind(repository);
    repository.getNextJobToRun = (...args) => {
      if (!this.taking) return Promise.resolve(undefined);
      const pauses = this.pauses;
      const landed = getNextJobToRun(...args).then(async (job) => {
        if (!job || pauses === this.pauses) {
          if (job?._id !== undefined) this.held.set(String(job._id), job._id);
          return job;
        }
        if (job._id !== undefined) await repository.unlockJobs([job._id]);
        return undefined;
      });
      this.locking.add(landed);
      const forget = () => this.locking.delete(landed);
      landed.then(forget, forget);
      return landed;
    };
    // What Agenda gives back itself is no longer ours to give back.
    const unlockJobs = repository.unlockJobs.bind(repository);
    repository.unlockJobs = (ids) => {
      for (const id of ids) this.held.delete(String(id));
      return unlockJobs(ids);
    };
    const unlockJob = repository.unlockJob.bind(repository);
    repository.unlockJob = (job) => {
      this.held.delete(String(job._id));
      return unlockJob(job);
    };
  }

  static async create(options: JobRunnerOptions): Promise<JobRunner> {
    const { logger } = options;
    let pool: pg.Pool | undefined;
    let backend: PostgresBackend | Awaited<ReturnType<typeof mongoBackend>>;
    if (options.mongoUrl) backend = await mongoBackend(options.mongoUrl);
    else {
      // Our own pool, because the backend's would have no error listener: a connection dropped by
      // the server while idle would end the process. pg-pool replaces dropped connections itself.
      // One connection is held by LISTEN.
      pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, application_name: "svc-gateway jobs" });
      pool.on("error", (err) => logger.warn({ err }, "job runner: database connection lost; the pool opens a new one when needed"));
      backend = new PostgresBackend({ pool, disableNotifications: options.embedded });
      // The LISTEN connection reconnects by itself (every 100 ms); without a listener its errors
      // would be thrown. Logged once per loss, and once when it is back.
      const channel = backend.notificationChannel;
      let channelDown = false;
      channel?.on("error", (err: unknown) => {
        if (!channelDown) logger.warn({ err }, "job runner: notification channel lost; it reconnects, polling meanwhile");
        channelDown = true;
      });
      channel?.on("stateChange", (state: string) => {
        if (state === "connected" && channelDown) logger.info("job runner: notification channel is back");
        if (state === "connected") channelDown = false;
      });
    }
    const connected = backend;
    await waitForDependency(() => connected.connect(), {
      what: options.mongoUrl ? `the MongoDB job backend at ${endpointOf(options.mongoUrl)}` : "the job tables",
      waitMs: options.waitMs ?? 0,
      setting: "DATABASE_WAIT_S",
      retryable: (err) => isDatabaseUnavailable(err) || isMongoUnavailable(err),
      logger,
    }).catch(async (err: unknown) => {
      await pool?.end().catch(() => undefined);
      throw err;
    });
    // Agenda's constructor connects the backend again and does not handle a rejection (the
    // process would end): connected already, the second call has nothing to do.
    backend.connect = () => Promise.resolve();
    const agenda = new Agenda({
      backend,
      // Only PostgreSQL's LISTEN/NOTIFY wakes Agenda for a new job; on the embedded database and on
      // MongoDB (no notification channel) a job waits for the next poll, so they poll more often.
      processEvery: options.processEveryMs ?? (options.embedded || options.mongoUrl ? 500 : 2000),
      defaultConcurrency: 10,
      maxConcurrency: 40,
    } as ConstructorParameters<typeof Agenda>[0]);
    agenda.on("error", (err: unknown) => {
      // An outage makes every poll fail until it ends; Agenda polls again by itself.
      if (isDatabaseUnavailable(err) || isMongoUnavailable(err)) logger.warn({ err }, "job runner: backend unavailable; polling again");
      else logger.error({ err }, "job runner error");
    });
    // stop() keeps the connection for a restart (agenda.stop(false)); it is closed once, at the end.
    const closeBackend = pool ? () => pool.end() : () => connected.disconnect();
    return new JobRunner(agenda, logger, () => closeBackend().catch(() => undefined));
  }

  define<T>(job: JobDefinition<T>): void {
    const lockLifetime = job.lockLifetimeMs ?? 60_000;
    this.agenda.define<T>(
      job.name,
      async (j) => {
        const renew = job.heartbeat ? setInterval(() => void j.touch().catch(() => undefined), lockLifetime / 3) : undefined;
        try {
          // A job that meets a database outage (Agenda may have fetched it before the outage began)
          // runs again once the database is back, within half its lock, rather than being marked
          // failed. Jobs are idempotent, so running again is safe.
          await retryWhileUnavailable(() => job.run(j.attrs.data), job.heartbeat ? HEARTBEAT_RETRY_WINDOW_MS : lockLifetime / 2);
        } catch (err) {
          this.logger.error({ err, job: job.name }, "job failed");
          throw err;
        } finally {
          clearInterval(renew);
        }
      },
      { concurrency: job.concurrency ?? 5, lockLifetime, removeOnComplete: job.removeOnComplete ?? false },
    );
  }

  async start(): Promise<void> {
    this.taking = true;
    await this.agenda.start();
    this.started = true;
  }

  get ready(): boolean {
    return this.started;
  }

  /**
   * Takes no more jobs and gives back at once those it had locked ahead of their time (Agenda
   * locks what falls due before its next scan) and those whose lock was landing as it paused,
   * then lets the jobs in flight finish, up to `timeoutMs`. The connection stays open: start()
   * takes jobs again. (Agenda's drain() would leave the ones locked ahead locked for their whole
   * lock lifetime: a recurring lane, or a job due in a second, would wait that long for another
   * process.)
   */
  async pause(timeoutMs = 10_000): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.taking = false;
    this.pauses += 1;
    await this.agenda.stop(false);
    // The locks landing after Agenda's stop unlocked what it held, each given back as it lands.
    await Promise.allSettled([...this.locking]);
    // Until each running job is saved and unlocked.
    const deadline = Date.now() + timeoutMs;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    // Locked here and neither run nor given back by Agenda: given back now.
    const runningIds = new Set([...this.running].map((job) => String((job as { attrs: { _id?: unknown } }).attrs._id)));
    const stale = [...this.held].filter(([id]) => !runningIds.has(id)).map(([, id]) => id);
    if (stale.length) await this.agenda.db.unlockJobs(stale);
  }

  /** pause(), then closes the backend's connections. */
  async stop(timeoutMs = 10_000): Promise<void> {
    await this.pause(timeoutMs);
    await this.closeBackend();
  }
}

async function mongoBackend(url: string) {
  const { MongoBackend } = await import("@agendajs/mongo-backend");
  return new MongoBackend({ address: url, options: { serverSelectionTimeoutMS: MONGO_SELECTION_TIMEOUT_MS } });
}

/** The MongoDB driver's "no server reachable" errors. */
function isMongoUnavailable(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return typeof name === "string" && /^Mongo(ServerSelection|Network|NetworkTimeout|TopologyClosed)Error$/.test(name);
}
