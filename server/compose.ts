// The composition root: every service of the process is built once, by the factory of its folder,
// from what it takes; the routes, the tool endpoint and the jobs are handed the services they
// call, never the whole. server/gateway.ts opens what these parts stand on (database, job runner,
// LISTEN connection, mailer, engines), then starts the loops and stops everything in reverse
// (docs/decisions.md, "One composition root").
import type { Express } from "express";
import type { DataSource } from "typeorm";
import { pruneJob } from "../jobs/prune.js";
import { JobRelay } from "../jobs/outbox.js";
import type { JobDefinition, JobRunner } from "../jobs/runner.js";
import { createAi } from "./ai/index.js";
import type { AiCredentialService } from "./ai/credentials.js";
import type { AiPolicyService } from "./ai/policies.js";
import type { AiRunner } from "./ai/runs/runner.js";
import type { ApiKeyService } from "./api-keys/service.js";
import { createApp, type ApiRoutes } from "./app.js";
import { createAuth } from "./auth/index.js";
import type { ApiKeyCache } from "./auth/key-cache.js";
import type { SignInService } from "./auth/sign-in.js";
import type { Config } from "./config.js";
import { createConnections } from "./connections/index.js";
import type { DatabaseListener } from "./db/listener.js";
import type { EngineRegistry } from "./engines/engine.js";
import { createEvents } from "./events/index.js";
import type { EventReplay } from "./events/replay.js";
import type { EventFeed } from "./events/stream.js";
import { createGroups } from "./groups/index.js";
import type { Logger } from "./logger.js";
import type { Loop } from "./loop.js";
import type { Mailer } from "./mail/mailer.js";
import { mcpRouter } from "./mcp/handlers.js";
import type { ToolServices } from "./mcp/tool.js";
import type { MessageDispatcher } from "./messages/dispatcher.js";
import { Foreground } from "./foreground.js";
import { createMessages } from "./messages/index.js";
import { createOAuth } from "./oauth/index.js";
import type { OAuthService } from "./oauth/service.js";
import type { Metrics } from "./ops/metrics.js";
import type { Readiness } from "./ops/routes.js";
import type { ProviderCallbackService } from "./provider/service.js";
import type { ScheduleFiring } from "./schedules/firing.js";
import { createSchedules } from "./schedules/index.js";
import { createTeam } from "./team/index.js";
import type { TeamService } from "./team/service.js";
import type { WebhookDeliverer } from "./webhooks/delivery.js";
import type { WebhookFanout } from "./webhooks/fanout.js";
import { createWebhooks } from "./webhooks/index.js";
import { createWorkspace } from "./workspace/index.js";

/** What the services stand on: opened by server/gateway.ts before anything is composed. */
export interface Foundation {
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
}

/** A composed gateway: its foundation, the dispatcher and the services. */
export interface GatewayParts extends Foundation {
  /** Hands accepted messages to their engine (started only when config.dispatch.enabled). */
  dispatcher: MessageDispatcher;
  services: Services;
}

/** Every service of the process: those the tools call too (server/mcp/tool.ts), and the rest. */
export interface Services extends ToolServices {
  signIn: SignInService;
  apiKeys: ApiKeyService;
  team: TeamService;
  providerCallbacks: ProviderCallbackService;
  /** Fires due schedules; run by each process's ScheduleFiringLoop (server/schedules/firing.ts). */
  scheduleFiring: ScheduleFiring;
  /** Work the process puts first (a burst of schedules firing): its dispatcher waits for it. */
  foreground: Foreground;
  /** Makes webhook attempts: first attempts in its worker loop, retries from `webhook.retry` jobs. */
  webhookDeliverer: WebhookDeliverer;
  /** Turns events into webhook deliveries (a loop, started with the gateway). */
  webhookFanout: WebhookFanout;
  /** GET /v1/events: the event log a page at a time. */
  events: EventReplay;
  aiCredentials: AiCredentialService;
  aiPolicies: AiPolicyService;
  /** AI runs: claimed and worked on by `ai.run` jobs (jobs/ai-run.ts), listed by GET /v1/ai/runs. */
  aiRuns: AiRunner;
  oauth: OAuthService;
  /** Hands the job outbox's rows to Agenda (a loop, started with the gateway). */
  jobRelay: JobRelay;
}

/** A composed gateway: its parts, the contract's routes over them, and its loops in start order. */
export interface Composed {
  parts: GatewayParts;
  routes: ApiRoutes;
  /** Every Agenda job of the process, defined before the runner starts (each idempotent). */
  jobs: JobDefinition<unknown>[];
  /** Started in this order once the app serves, stopped in reverse (server/gateway.ts). */
  loops: Loop[];
}

/**
 * Every resource folder's factory (its index.ts), each given only what it uses; the services they
 * return are handed on to the folders that call them.
 */
export function compose(deps: Foundation, providerCallbacks: ProviderCallbackService): Composed {
  const { db, config, logger, engines, keyCache, mailer, metrics, listener, jobs } = deps;
  // Schedules due together are fired before this process's dispatcher claims more (server/foreground.ts).
  const foreground = new Foreground();
  const messages = createMessages({ db, config, engines, logger, listener, foreground });
  const auth = createAuth({ db, mailer, logger, config });
  const workspace = createWorkspace({ db, keyCache });
  const team = createTeam({ db, mailer, config, logger, keyCache });
  const connections = createConnections({ db, config, engines, logger });
  const groups = createGroups({ db, config, engines, connections: connections.connections });
  const schedules = createSchedules({ db, logger, sender: messages.sender, listener, foreground });
  const webhooks = createWebhooks({ db, logger, config, listener });
  const events = createEvents({ db, config });
  const ai = createAi({ db, logger, config, sender: messages.sender, onUsageOverLimit: (provider) => metrics.aiUsageOverLimit.inc({ provider }) });
  const oauth = createOAuth({ db, config });
  const jobRelay = new JobRelay(db, jobs, logger, { listener });
  const services: Services = {
    signIn: auth.signIn,
    apiKeys: workspace.apiKeys,
    team: team.team,
    workspaces: workspace.workspaces,
    sender: messages.sender,
    messageLifecycle: messages.messageLifecycle,
    messageReader: messages.messageReader,
    conversations: messages.conversations,
    connections: connections.connections,
    groups: groups.groups,
    providerCallbacks,
    schedules: schedules.schedules,
    scheduleFiring: schedules.scheduleFiring,
    foreground,
    webhooks: webhooks.webhooks,
    webhookDeliverer: webhooks.webhookDeliverer,
    webhookFanout: webhooks.webhookFanout,
    events: events.events,
    aiCredentials: ai.aiCredentials,
    aiPolicies: ai.aiPolicies,
    aiRuns: ai.aiRuns,
    oauth: oauth.oauth,
    jobRelay,
  };
  // ts-rest registers Express routes in the order of these keys: keep it.
  const routes: ApiRoutes = {
    ...messages.routers,
    connections: connections.router,
    groups: groups.router,
    schedules: schedules.router,
    webhooks: webhooks.router,
    events: events.router,
    ai: ai.router,
    workspace: workspace.router,
    team: team.router,
    auth: auth.router,
    oauth: oauth.router,
    mcp: mcpRouter(services, config, logger),
  };
  return {
    parts: { ...deps, dispatcher: messages.dispatcher, services },
    routes,
    jobs: [...messages.jobs, ...connections.jobs, ...webhooks.jobs, pruneJob(db, config.events.retentionDays), ...ai.jobs],
    loops: [...messages.loops, ...webhooks.loops, jobRelay, ...schedules.loops],
  };
}

/** The HTTP app over a composed gateway. */
export function composeApp({ parts, routes }: Composed, readiness: Readiness): Express {
  return createApp({ ...parts, providerCallbacks: parts.services.providerCallbacks }, routes, readiness);
}
