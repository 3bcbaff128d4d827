// Everything a request or a job may need, built once at start and passed down explicitly.
import { GroupService } from "./groups/service.js";
import type { DataSource } from "typeorm";
import { ApiKeyService } from "./api-keys/service.js";
import { ApiKeyCache } from "./auth/key-cache.js";
import { SignInService } from "./auth/sign-in.js";
import type { Config } from "./config.js";
import type { Logger } from "./logger.js";
import type { Mailer } from "./mail/mailer.js";
import type { Metrics } from "./ops/metrics.js";
import { TeamService } from "./team/service.js";
import { WorkspaceService } from "./workspace/service.js";
import type { JobRunner } from "../jobs/runner.js";
import { JobRelay } from "../jobs/outbox.js";
import type { DatabaseListener } from "./db/listener.js";
import type { EngineRegistry } from "./engines/engine.js";
import { MessageDispatcher } from "./messages/dispatcher.js";
import { MessageLifecycle } from "./messages/lifecycle.js";
import { MessageSender } from "./messages/send.js";
import { ConnectionService } from "./connections/service.js";
import type { EventFeed } from "./events/stream.js";
import { ProviderCallbackService } from "./provider/service.js";
import { ScheduleFiring } from "./schedules/firing.js";
import { ScheduleService } from "./schedules/service.js";
import { WebhookDeliverer } from "./webhooks/delivery.js";
import { WebhookFanout } from "./webhooks/fanout.js";
import { WebhookEndpointService } from "./webhooks/service.js";
import { AiRunner } from "./ai/runs.js";

export interface AppContext {
  config: Config;
  db: DataSource;
  logger: Logger;
  mailer: Mailer;
  metrics: Metrics;
  jobs: JobRunner;
  /** Linked-device engines by name; `config.transport` names the default for new connections. */
  engines: EngineRegistry;
  /** Resolved API keys of this process (server/auth/key-cache.ts). */
  keyCache: ApiKeyCache;
  /** This process's LISTEN connection (server/db/listener.ts). */
  listener: DatabaseListener;
  /** Reads new events once per tick for every open dashboard event stream (server/events/stream.ts). */
  eventFeed: EventFeed;
  /** Hands accepted messages to their engine (started only when config.dispatch.enabled). */
  dispatcher: MessageDispatcher;
  services: Services;
}

/** With NOTIFY svc_events waking it, the fan-out's poll is only the fallback for a lost LISTEN connection. */
const FANOUT_POLL_WITH_NOTIFY_MS = 1_000;

export interface Services {
  signIn: SignInService;
  apiKeys: ApiKeyService;
  team: TeamService;
  workspaces: WorkspaceService;
  sender: MessageSender;
  messageLifecycle: MessageLifecycle;
  connections: ConnectionService;
  /** The groups of a connection's number, through its engine. */
  groups: GroupService;
  providerCallbacks: ProviderCallbackService;
  schedules: ScheduleService;
  /** Fires due schedules; run by the Agenda lanes of jobs/schedule-fire.ts. */
  scheduleFiring: ScheduleFiring;
  webhooks: WebhookEndpointService;
  /** Makes webhook attempts: first attempts in its worker loop, retries from `webhook.retry` jobs. */
  webhookDeliverer: WebhookDeliverer;
  /** Turns events into webhook deliveries (a loop, started with the gateway). */
  webhookFanout: WebhookFanout;
  /** AI runs: claimed and worked on by `ai.run` jobs (jobs/ai-run.ts), listed by GET /v1/ai/runs. */
  aiRuns: AiRunner;
  /** Hands the job outbox's rows to Agenda (a loop, started with the gateway). */
  jobRelay: JobRelay;
}

export function createDispatcher(deps: Omit<AppContext, "services" | "dispatcher">): MessageDispatcher {
  return new MessageDispatcher(deps.db, deps.config, deps.engines, deps.logger);
}

/**
 * What engines report, over the HTTP callback route or in process (the Baileys engine): built
 * before the engines, which report through it, and shared with the services.
 */
export function createProviderCallbacks(deps: Pick<AppContext, "db" | "config">): ProviderCallbackService {
  return new ProviderCallbackService(deps.db, { aiDebounceMs: deps.config.ai.debounceMs });
}

export function createServices(deps: Omit<AppContext, "services"> & Pick<Services, "providerCallbacks">): Services {
  const sender = new MessageSender(deps.db, () => deps.dispatcher.wake());
  const webhookDeliverer = new WebhookDeliverer(deps.db, deps.logger, {
    secretKey: deps.config.secretKey,
    allowPrivate: deps.config.webhooks.allowPrivate,
    timeoutMs: deps.config.webhooks.timeoutMs,
    ...(deps.config.webhooks.retryScheduleMs ? { retryScheduleMs: deps.config.webhooks.retryScheduleMs } : {}),
  });
  const connections = new ConnectionService(deps.db, deps.config, deps.engines, deps.logger);
  const services: Services = {
    sender,
    messageLifecycle: new MessageLifecycle(deps.db, () => deps.dispatcher.wake()),
    signIn: new SignInService(deps.db, deps.mailer, deps.logger, deps.config.secretKey),
    apiKeys: new ApiKeyService(deps.db, deps.keyCache),
    team: new TeamService(deps.db, deps.mailer, deps.config, deps.logger, deps.keyCache),
    workspaces: new WorkspaceService(deps.db, deps.keyCache),
    connections,
    groups: new GroupService(deps.db, deps.config, deps.engines, connections),
    providerCallbacks: deps.providerCallbacks,
    schedules: new ScheduleService(deps.db, sender),
    scheduleFiring: new ScheduleFiring(deps.db, deps.logger),
    webhooks: new WebhookEndpointService(deps.db, {
      secretKey: deps.config.secretKey,
      allowPrivate: deps.config.webhooks.allowPrivate,
      onResend: () => webhookDeliverer.wake(),
    }),
    webhookDeliverer,
    webhookFanout: new WebhookFanout(deps.db, deps.logger, () => webhookDeliverer.wake(), deps.listener.enabled ? { idlePollMs: FANOUT_POLL_WITH_NOTIFY_MS } : {}),
    aiRuns: new AiRunner(deps.db, sender, deps.logger, {
      secretKey: deps.config.secretKey,
      allowPrivate: deps.config.webhooks.allowPrivate,
      vendorTimeoutMs: deps.config.ai.vendorTimeoutMs,
      onUsageOverLimit: (provider) => deps.metrics.aiUsageOverLimit.inc({ provider }),
    }),
    jobRelay: new JobRelay(deps.db, deps.jobs, deps.logger),
  };
  return services;
}
