// Every entity and migration, in one list each: the data source and the CLI both read these.
// Entities are the tables served through TypeORM repositories (docs/decisions.md, "TypeORM's
// role"); tables written and read only by SQL have row types next to their SQL instead.
import { ApiKey } from "../api-keys/entities.js";
import { Invitation, Member } from "../team/entities.js";
import { AuditEntry, Plan, Workspace } from "../workspace/entities.js";
import { Connection, PairingGrant } from "../connections/entities.js";
import { DomainEvent } from "../events/entities.js";
import { Identity1732240000000 } from "./migrations/1732240000000-identity.js";
import { Messaging1732240100000 } from "./migrations/1732240100000-messaging.js";
import { Sandbox1732240200000 } from "./migrations/1732240200000-sandbox.js";
import { Schedules1732240300000 } from "./migrations/1732240300000-schedules.js";
import { SANDBOX_ENTITIES } from "../engines/sandbox/entities.js";
import { Schedule } from "../schedules/entities.js";
import { Webhooks1732240400000 } from "./migrations/1732240400000-webhooks.js";
import { AuthChanges1732240500000 } from "./migrations/1732240500000-auth-changes.js";
import { OAuth1732250600000 } from "./migrations/1732250600000-oauth.js";
import { Baileys1732250500000 } from "./migrations/1732250500000-baileys.js";
import { Ai1732250700000 } from "./migrations/1732250700000-ai.js";
import { AiRuns1732250800000 } from "./migrations/1732250800000-ai-runs.js";
import { TimelineOrder1732250919000 } from "./migrations/1732250919000-timeline-order.js";
import { ConnectionDetail1732250920000 } from "./migrations/1732250920000-connection-detail.js";
import { Conversations1732251000000 } from "./migrations/1732251000000-conversations.js";
import { EventSinks1732260000000 } from "./migrations/1732260000000-event-sinks.js";
import { PairingCode1732261000000 } from "./migrations/1732261000000-pairing-code.js";
import { ConnectionProxy1732261100000 } from "./migrations/1732261100000-connection-proxy.js";
import { DispatchPace1732261200000 } from "./migrations/1732261200000-dispatch-pace.js";
import { NumberChecks1732261300000 } from "./migrations/1732261300000-number-checks.js";
import { JobOutbox1732261400000 } from "./migrations/1732261400000-job-outbox.js";
import { Groups1732261500000 } from "./migrations/1732261500000-groups.js";
import { ConnectionRestriction1732261600000 } from "./migrations/1732261600000-connection-restriction.js";
import { EventsUnmatched1732261700000 } from "./migrations/1732261700000-events-unmatched.js";
import { SandboxReceipts1732261800000 } from "./migrations/1732261800000-sandbox-receipts.js";
import { SchedulesNotify1732261900000 } from "./migrations/1732261900000-schedules-notify.js";
import { BaileysProcesses1732262000000 } from "./migrations/1732262000000-baileys-processes.js";
import { HandoffNotify1732262100000 } from "./migrations/1732262100000-handoff-notify.js";
import { MessagesFillfactor1732262200000 } from "./migrations/1732262200000-messages-fillfactor.js";
import { MessagePathPerRow1732262300000 } from "./migrations/1732262300000-message-path-per-row.js";

export const ENTITIES = [
  Plan,
  Workspace,
  AuditEntry,
  Member,
  Invitation,
  ApiKey,
  Connection,
  PairingGrant,
  DomainEvent,
  Schedule,
  ...SANDBOX_ENTITIES,
];

export const MIGRATIONS = [
  Identity1732240000000,
  Messaging1732240100000,
  Sandbox1732240200000,
  Schedules1732240300000,
  Webhooks1732240400000,
  AuthChanges1732240500000,
  Baileys1732250500000,
  OAuth1732250600000,
  Ai1732250700000,
  AiRuns1732250800000,
  TimelineOrder1732250919000,
  ConnectionDetail1732250920000,
  Conversations1732251000000,
  EventSinks1732260000000,
  PairingCode1732261000000,
  ConnectionProxy1732261100000,
  DispatchPace1732261200000,
  NumberChecks1732261300000,
  JobOutbox1732261400000,
  Groups1732261500000,
  ConnectionRestriction1732261600000,
  EventsUnmatched1732261700000,
  SandboxReceipts1732261800000,
  SchedulesNotify1732261900000,
  BaileysProcesses1732262000000,
  HandoffNotify1732262100000,
  MessagesFillfactor1732262200000,
  MessagePathPerRow1732262300000,
];
