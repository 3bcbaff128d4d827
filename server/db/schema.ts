// Every entity and migration, in one list each: the data source and the CLI both read these.
import { ApiKey } from "../api-keys/entities.js";
import { Session, SignInCode } from "../auth/entities.js";
import { Invitation, Member, User } from "../team/entities.js";
import { AuditEntry, Plan, UsageDay, Workspace } from "../workspace/entities.js";
import { Connection, PairingGrant } from "../connections/entities.js";
import { DomainEvent } from "../events/entities.js";
import { DispatchEntry, Message, TimelineEntry } from "../messages/entities.js";
import { Identity1732240000000 } from "./migrations/1732240000000-identity.js";
import { Messaging1732240100000 } from "./migrations/1732240100000-messaging.js";
import { Sandbox1732240200000 } from "./migrations/1732240200000-sandbox.js";
import { Schedules1732240300000 } from "./migrations/1732240300000-schedules.js";
import { SANDBOX_ENTITIES } from "../engines/sandbox/entities.js";
import { Schedule, ScheduleRun } from "../schedules/entities.js";
import { Webhooks1732240400000 } from "./migrations/1732240400000-webhooks.js";
import { AuthChanges1732240500000 } from "./migrations/1732240500000-auth-changes.js";
import { Baileys1732250500000 } from "./migrations/1732250500000-baileys.js";
import { WEBHOOK_ENTITIES } from "../webhooks/entities.js";

export const ENTITIES = [
  Plan,
  Workspace,
  UsageDay,
  AuditEntry,
  User,
  Member,
  Invitation,
  SignInCode,
  Session,
  ApiKey,
  Connection,
  PairingGrant,
  Message,
  TimelineEntry,
  DispatchEntry,
  DomainEvent,
  Schedule,
  ScheduleRun,
  ...SANDBOX_ENTITIES,
  ...WEBHOOK_ENTITIES,
];

export const MIGRATIONS = [Identity1732240000000, Messaging1732240100000, Sandbox1732240200000, Schedules1732240300000, Webhooks1732240400000, AuthChanges1732240500000, Baileys1732250500000];
