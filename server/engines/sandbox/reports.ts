// Building and queueing the sandbox's reports: provider events in the wire format of
// contract/ops.ts, written to the callback outbox in the statement (or transaction) of the change
// that causes them.
import type { EntityManager } from "typeorm";
import type { ConnectionRestrictionEvent, ConnectionStateEvent, ConversationEvent, GroupMetadataEvent, GroupParticipantsEvent, InboundMessageEvent, MessageStatusEvent, PhoneOutboundEvent } from "../../../contract/index.js";
import { randomBase64url } from "../../ids.js";

type WithoutId<T> = T extends unknown ? Omit<T, "event_id"> : never;
export type SandboxReport = WithoutId<ConnectionStateEvent | ConnectionRestrictionEvent | InboundMessageEvent | MessageStatusEvent | PhoneOutboundEvent | ConversationEvent | GroupMetadataEvent | GroupParticipantsEvent>;

export interface QueuedReport {
  connectionId: string;
  report: SandboxReport;
  /** Posted no sooner than this many milliseconds from now. */
  delayMs?: number;
}

// Ids, not secrets: from the pool every id of the process draws on (server/ids.ts); three or
// more per message the simulated network takes.
export function newEventId(): string {
  return `sbx_evt_${randomBase64url(12)}`;
}

export function newProviderMessageId(): string {
  return `sbx_msg_${randomBase64url(12)}`;
}

/**
 * Rows for `sandbox_callbacks`, as the JSON parameter of `INSERT … SELECT FROM jsonb_to_recordset`.
 * With `duplicate`, every report is queued twice with the same event_id (fault injection: the
 * gateway must deduplicate redeliveries).
 */
export function reportRows(reports: QueuedReport[], duplicate: boolean): string {
  const rows = reports.flatMap(({ connectionId, report, delayMs = 0 }) => {
    const row = { connection_id: connectionId, kind: report.type, delay_ms: delayMs, event: { ...report, event_id: newEventId() } };
    return duplicate ? [row, row] : [row];
  });
  return JSON.stringify(rows);
}

/** SQL that inserts the rows of `reportRows` given as parameter `$n`. */
export function insertReportsSql(param: string): string {
  return `INSERT INTO sandbox_callbacks (connection_id, kind, event, due_at)
          SELECT r.connection_id, r.kind, r.event, clock_timestamp() + make_interval(secs => r.delay_ms / 1000.0)
            FROM jsonb_to_recordset(${param}::jsonb) AS r(connection_id text, kind text, event jsonb, delay_ms int)`;
}

export async function queueReports(em: EntityManager, reports: QueuedReport[], duplicate: boolean): Promise<void> {
  if (reports.length) await em.query(insertReportsSql("$1"), [reportRows(reports, duplicate)]);
}
