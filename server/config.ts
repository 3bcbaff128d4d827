// The environment, parsed once. Nothing else in the project reads process.env.
import { randomBytes } from "node:crypto";
import { readFileSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { ENGINE_NAMES, ProxyUrl, type EngineName } from "../contract/connections.js";
import { createPrivateFile, ensurePrivateDir } from "./data-dir.js";
import { parseAllowList, type AllowList } from "./outbound/address-policy.js";

/** The largest AI_VENDOR_TIMEOUT_S: a run's lease (server/ai/runs/states.ts) outlasts it with a send to spare. */
export const AI_VENDOR_TIMEOUT_MAX_S = 150;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** The owner of the first workspace outside production when ADMIN_EMAIL is unset. */
export const DEVELOPMENT_ADMIN_EMAIL = "admin@localhost";

const Env = z.object({
  NODE_ENV: z.string().default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  BASE_URL: z.string().url().optional(),
  WEB_URL: z.string().url().optional(),
  DATABASE_URL: z.string().min(1).optional(),
  DATA_DIR: z.string().min(1).default("./.data"),
  JOBS_MONGODB_URL: z.string().min(1).optional(),
  /** How long start-up waits for an unreachable database (and MongoDB job backend), seconds; then it exits. */
  DATABASE_WAIT_S: z.coerce.number().int().min(0).max(3600).default(60),
  /** Engine for new connections. Unset: `sandbox` in development, `baileys` in production (which has no sandbox). */
  TRANSPORT: z.enum(ENGINE_NAMES).optional(),
  SMTP_URL: z.string().min(1).optional(),
  /** `log`: mail to the log and DATA_DIR/outbox. Unset: `smtp` with SMTP_URL, else `log` outside production. */
  MAIL_TRANSPORT: z.enum(["smtp", "log"]).optional(),
  MAIL_FROM: z.string().min(3).default("svc-gateway <no-reply@localhost>"),
  SECRET_KEY: z.string().min(1).optional(),
  ADMIN_EMAIL: z.string().email().optional(),
  METRICS_TOKEN: z.string().min(16, "METRICS_TOKEN must be at least 16 characters").optional(),
  /** CIDRs that tenant-given URLs (webhooks, an AI credential's base_url, media) may reach although private. */
  OUTBOUND_ALLOW_PRIVATE: z.string().optional(),
  /** The older name of OUTBOUND_ALLOW_PRIVATE, still read when the new one is unset. */
  WEBHOOK_ALLOW_PRIVATE: z.string().optional(),
  /** Per-attempt webhook timeout; the product promise is 10 s, lower values are for tests. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(10_000),
  /** Webhook retry delays in seconds, comma-separated (tests); unset: the schedule of server/webhooks/delivery.ts. */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*)*$/, "comma-separated delays in seconds, e.g. 1,5,30")
    .optional(),
  /** AI debounce: inbound messages of one contact this close together get one run; the product promise is 3 s, lower values are for tests. */
  AI_DEBOUNCE_MS: z.coerce.number().int().min(100).max(3_000).default(3_000),
  /** One time bound per AI run's vendor call, retries and their waits included (docs/ai.md). */
  AI_VENDOR_TIMEOUT_S: z.coerce.number().int().min(1).max(AI_VENDOR_TIMEOUT_MAX_S).default(30),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  /** Express "trust proxy": which hops may set X-Forwarded-For (e.g. `loopback`, `1`). Unset: none. */
  TRUST_PROXY: z.string().min(1).optional(),
  /** Hand-off pacing per connection, messages per second, so a number is not flagged for bursts. */
  DISPATCH_RATE_PER_CONNECTION: z.coerce.number().positive().max(10_000).default(10),
  /** How long a claimed hand-off stays locked before another process may retry it (crash recovery). */
  DISPATCH_LOCK_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  /** `off` runs an API-only process that accepts but does not hand off (another process does). */
  DISPATCHER: z.enum(["on", "off"]).default("on"),
  /** Per API key and process, a token bucket refilled at this rate: 100 a second (docs/decisions.md). */
  API_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  /** The bucket's size, what a key may send at once after a pause. Unset: two seconds of the rate. */
  API_RATE_LIMIT_BURST: z.coerce.number().int().min(1).optional(),
  /** The largest media GET /v1/messages/{id}/media streams, in bytes (default 100 MiB). */
  MEDIA_MAX_BYTES: z.coerce.number().int().min(1).max(2 ** 31).default(100 * 1024 * 1024),
  /** Baileys engine: how long a process's hold on a connection's socket lasts unrenewed (docs/engines.md). */
  BAILEYS_LEASE_SECONDS: z.coerce.number().int().min(4).max(300).default(20),
  /** Outside production only: a module whose createSocket replaces the library's socket (tests' stand-in). */
  BAILEYS_SOCKET_MODULE: z.string().min(1).optional(),
  /** Pins the client version the Baileys engine presents ("2.3000.1043857760"); unset: fetched at start and on a refusal. */
  BAILEYS_WA_VERSION: z
    .string()
    .regex(/^\d{1,4}\.\d{1,6}\.\d{1,12}$/, "must be major.minor.revision, e.g. 2.3000.1043857760")
    .optional(),
  /** Baileys engine: milliseconds between two messages of one connection, `min-max`, each gap drawn between them. */
  BAILEYS_PACE_MS: z
    .string()
    .regex(/^\d{1,6}-\d{1,6}$/, "must be min-max in milliseconds, e.g. 2000-5000")
    .refine((v) => Number(v.split("-")[0]) <= Number(v.split("-")[1]), "min must not exceed max")
    .default("2000-5000"),
  /** Baileys engine: the proxy every connection's socket goes through unless it sets its own (socks5://, http://). */
  BAILEYS_PROXY_URL: ProxyUrl.optional(),
  /** NATS server whose JetStream gets every event (docs/events.md), e.g. nats://127.0.0.1:4222. Unset: no publishing there. */
  EVENTS_NATS_URL: z.string().min(1).optional(),
  /** The JetStream stream, created if missing with the subjects `<EVENTS_SUBJECT_PREFIX>.>`. */
  EVENTS_NATS_STREAM: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, _ and - (1-64)").default("SVC_EVENTS"),
  /** RabbitMQ (AMQP 0-9-1) broker that gets every event, e.g. amqp://guest:guest@127.0.0.1:5672. Unset: no publishing there. */
  EVENTS_AMQP_URL: z.string().min(1).optional(),
  /** The durable topic exchange events are published to. */
  EVENTS_AMQP_EXCHANGE: z.string().regex(/^[A-Za-z0-9_.:-]{1,127}$/, "letters, digits, _ . : and - (1-127)").default("svc.events"),
  /** The first tokens of every subject and routing key: `<prefix>.<workspace id>.<connection slug>.<type>`. */
  EVENTS_SUBJECT_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, "dot-separated tokens of letters, digits, _ and -").default("svc.events"),
  /** How long recorded events are kept for GET /v1/events (and the brokers' catch-up), days. */
  EVENTS_RETENTION_DAYS: z.coerce.number().int().min(3).max(3650).default(30),
});

export interface Config {
  production: boolean;
  port: number;
  host: string;
  baseUrl: string;
  webUrl: string;
  databaseUrl: string | undefined;
  dataDir: string;
  jobsMongoUrl: string | undefined;
  /** DATABASE_WAIT_S in milliseconds. */
  databaseWaitMs: number;
  transport: EngineName;
  /** Set when mail goes out by SMTP; undefined: the log transport (the development outbox). */
  smtpUrl: string | undefined;
  mailFrom: string;
  /** 32 bytes: encrypts stored secrets and signs cursors. */
  secretKey: Buffer;
  /** Owner of the first workspace; null in production without ADMIN_EMAIL (a first start then refuses). */
  adminEmail: string | null;
  metricsToken: string | undefined;
  webhookAllowPrivate: string[];
  webhooks: {
    /** OUTBOUND_ALLOW_PRIVATE (or WEBHOOK_ALLOW_PRIVATE), parsed once: a bad CIDR stops start-up. */
    allowPrivate: AllowList;
    timeoutMs: number;
    /** Retry delays in milliseconds when overridden by WEBHOOK_RETRY_SCHEDULE; else undefined. */
    retryScheduleMs: number[] | undefined;
  };
  ai: { debounceMs: number; vendorTimeoutMs: number };
  logLevel: (typeof LOG_LEVELS)[number];
  apiRateLimitPerMinute: number;
  apiRateLimitBurst: number;
  trustProxy: string | undefined;
  dispatch: { ratePerConnection: number; lockSeconds: number; enabled: boolean };
  /** The sandbox engine and its control API exist only outside production. */
  sandboxEnabled: boolean;
  baileys: { leaseSeconds: number; socketModule: string | undefined; waVersion: string | undefined; proxyUrl: string | undefined; pace: { minMs: number; maxMs: number } };
  /** MEDIA_MAX_BYTES: the largest media the media route streams. */
  mediaMaxBytes: number;
  /** Publishing the event outbox to the operator's brokers, and how long events are kept (docs/events.md). */
  events: EventsConfig;
}

export interface EventsConfig {
  natsUrl: string | undefined;
  natsStream: string;
  amqpUrl: string | undefined;
  amqpExchange: string;
  subjectPrefix: string;
  retentionDays: number;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = Env.safeParse(blankToUndefined(env));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  const e = parsed.data;
  const production = e.NODE_ENV === "production";
  if (production) {
    const missing: string[] = (["DATABASE_URL", "SECRET_KEY", "BASE_URL"] as const).filter((k) => !e[k]);
    // The log transport writes sign-in codes and invitation links where whoever reads the log can
    // use them: production takes it only when asked for by name (the mailer warns at every start).
    if (!e.SMTP_URL && e.MAIL_TRANSPORT !== "log") missing.push("SMTP_URL (or MAIL_TRANSPORT=log to write mail to the log)");
    if (missing.length) throw new ConfigError(`NODE_ENV=production requires ${missing.join(", ")}`);
    // A production gateway always talks to the real network.
    if (e.BAILEYS_SOCKET_MODULE) throw new ConfigError("BAILEYS_SOCKET_MODULE is for tests and is refused with NODE_ENV=production");
    // The sandbox is never mounted in production: connections made on it could never pair.
    if (e.TRANSPORT === "sandbox") throw new ConfigError("TRANSPORT=sandbox is refused with NODE_ENV=production (production has no sandbox engine): unset TRANSPORT or set TRANSPORT=baileys");
  }
  const smtpUrl = mailTransport(e) === "smtp" ? e.SMTP_URL : undefined;
  const dataDir = resolve(e.DATA_DIR);
  const webhookAllowPrivate = (e.OUTBOUND_ALLOW_PRIVATE ?? e.WEBHOOK_ALLOW_PRIVATE ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  let allowPrivate: AllowList;
  try {
    allowPrivate = parseAllowList(webhookAllowPrivate);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const baseUrl = stripSlash(e.BASE_URL ?? `http://localhost:${e.PORT}`);
  return {
    production,
    port: e.PORT,
    host: e.HOST,
    baseUrl,
    webUrl: stripSlash(e.WEB_URL ?? baseUrl),
    databaseUrl: e.DATABASE_URL,
    dataDir,
    jobsMongoUrl: e.JOBS_MONGODB_URL,
    databaseWaitMs: e.DATABASE_WAIT_S * 1000,
    transport: e.TRANSPORT ?? (production ? "baileys" : "sandbox"),
    smtpUrl,
    mailFrom: e.MAIL_FROM,
    secretKey: e.SECRET_KEY ? decodeSecretKey(e.SECRET_KEY) : developmentSecretKey(dataDir),
    adminEmail: e.ADMIN_EMAIL?.toLowerCase() ?? (production ? null : DEVELOPMENT_ADMIN_EMAIL),
    metricsToken: e.METRICS_TOKEN,
    webhookAllowPrivate,
    webhooks: {
      allowPrivate,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE?.split(",").map((s) => Math.round(Number(s.trim()) * 1000)),
    },
    ai: { debounceMs: e.AI_DEBOUNCE_MS, vendorTimeoutMs: e.AI_VENDOR_TIMEOUT_S * 1000 },
    logLevel: e.LOG_LEVEL,
    apiRateLimitPerMinute: e.API_RATE_LIMIT_PER_MINUTE,
    apiRateLimitBurst: e.API_RATE_LIMIT_BURST ?? Math.ceil((2 * e.API_RATE_LIMIT_PER_MINUTE) / 60),
    trustProxy: e.TRUST_PROXY,
    dispatch: { ratePerConnection: e.DISPATCH_RATE_PER_CONNECTION, lockSeconds: e.DISPATCH_LOCK_SECONDS, enabled: e.DISPATCHER === "on" },
    sandboxEnabled: !production,
    baileys: { leaseSeconds: e.BAILEYS_LEASE_SECONDS, socketModule: e.BAILEYS_SOCKET_MODULE ? resolve(e.BAILEYS_SOCKET_MODULE) : undefined, waVersion: e.BAILEYS_WA_VERSION, proxyUrl: e.BAILEYS_PROXY_URL, pace: { minMs: Number(e.BAILEYS_PACE_MS.split("-")[0]), maxMs: Number(e.BAILEYS_PACE_MS.split("-")[1]) } },
    mediaMaxBytes: e.MEDIA_MAX_BYTES,
    events: {
      natsUrl: e.EVENTS_NATS_URL,
      natsStream: e.EVENTS_NATS_STREAM,
      amqpUrl: e.EVENTS_AMQP_URL,
      amqpExchange: e.EVENTS_AMQP_EXCHANGE,
      subjectPrefix: e.EVENTS_SUBJECT_PREFIX,
      retentionDays: e.EVENTS_RETENTION_DAYS,
    },
  };
}

function mailTransport(e: z.infer<typeof Env>): "smtp" | "log" {
  if (e.MAIL_TRANSPORT === "smtp" && !e.SMTP_URL) throw new ConfigError("MAIL_TRANSPORT=smtp requires SMTP_URL");
  return e.MAIL_TRANSPORT ?? (e.SMTP_URL ? "smtp" : "log");
}

function blankToUndefined(env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === "" ? undefined : v]));
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

function decodeSecretKey(value: string): Buffer {
  const key = Buffer.from(value, "base64");
  if (key.length !== 32) throw new ConfigError("SECRET_KEY must be 32 random bytes, base64-encoded (openssl rand -base64 32)");
  return key;
}

/** Development only: a key generated once into DATA_DIR so restarts keep cursors and secrets valid. */
function developmentSecretKey(dataDir: string): Buffer {
  const file = join(dataDir, "secret.key");
  if (existsSync(file)) return decodeSecretKey(readFileSync(file, "utf8").trim());
  ensurePrivateDir(dataDir);
  const key = randomBytes(32);
  // Two processes starting together on a new DATA_DIR (a gateway and the CLI) keep the same key.
  if (!createPrivateFile(file, key.toString("base64") + "\n")) return decodeSecretKey(readFileSync(file, "utf8").trim());
  return key;
}
