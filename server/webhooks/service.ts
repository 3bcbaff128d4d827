// Webhook endpoints (docs/webhooks.md) and their delivery log (an extension beyond the spec).
// Who may manage them: an API key holding the route's scope (checked by the authentication
// middleware), or a session whose role may manage webhook endpoints (docs/webhooks.md; checked
// here). Every create, delete and resend is audited in the transaction that makes it.
import type { DataSource, EntityManager } from "typeorm";
import {
  WEBHOOK_EVENTS,
  type CreateWebhookEndpointBody,
  type ListWebhookDeliveriesQuery,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookDeliveryPage,
  type WebhookEndpoint,
  type WebhookEndpointCreated,
} from "../../contract/index.js";
import { rows } from "../db/rows.js";
import { cursorKey, decodeCursor, encodeCursor, filterFingerprint } from "../http/cursor.js";
import { ApiError, type FieldError } from "../http/errors.js";
import type { Principal } from "../http/principal.js";
import { newId } from "../ids.js";
import { MICROSECOND_INSTANT } from "../db/instant.js";
import { encrypt, randomToken } from "../secrets.js";
import { audit } from "../workspace/audit.js";
import { requirePlanFeature } from "../workspace/plan-gate.js";
import { PERMISSIONS } from "../workspace/roles.js";
import { checkWebhookUrl, type AllowList, type Lookup } from "../outbound/address-policy.js";

/** Signing secrets: `whsec_` and 32 random bytes in base64url. */
export const SECRET_PREFIX = "whsec_";

const KNOWN_EVENTS = new Set<string>(WEBHOOK_EVENTS);

export interface WebhookServiceOptions {
  secretKey: Buffer;
  allowPrivate: AllowList;
  /** Host resolver for the registration check (tests); default the system's. */
  lookup?: Lookup;
  /** Called after a resend committed (wakes this process's deliverer). */
  onResend?: () => void;
}

interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  connection_slug: string | null;
  created_at: Date;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: WebhookDelivery["status"];
  attempt_count: number;
  next_attempt_at: Date | null;
  created_at: Date;
  completed_at: Date | null;
  locked_until: Date | null;
  position_created_at: string;
}

interface AttemptRow {
  delivery_id: string;
  attempted_at: Date;
  trigger: WebhookAttempt["trigger"];
  status_code: number | null;
  latency_ms: number;
  error_code: string | null;
  error: string | null;
}

export function endpointView(r: EndpointRow): WebhookEndpoint {
  return {
    id: r.id,
    object: "webhook_endpoint",
    url: r.url,
    description: r.description,
    events: r.events,
    connection: r.connection_slug,
    created_at: r.created_at.toISOString(),
  };
}

function deliveryView(d: DeliveryRow, attempts: AttemptRow[]): WebhookDelivery {
  return {
    id: d.id,
    object: "webhook_delivery",
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempt_count: d.attempt_count,
    next_attempt_at: d.status === "pending" && d.next_attempt_at ? d.next_attempt_at.toISOString() : null,
    created_at: d.created_at.toISOString(),
    completed_at: d.completed_at?.toISOString() ?? null,
    attempts: attempts.map((a) => ({
      attempted_at: a.attempted_at.toISOString(),
      trigger: a.trigger,
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      error_code: a.error_code,
      error: a.error,
    })),
  };
}

const ENDPOINT_SELECT = `SELECT e.id, e.url, e.description, e.events, c.slug AS connection_slug, e.created_at
                           FROM webhook_endpoints e LEFT JOIN connections c ON c.id = e.connection_id`;
const DELIVERY_COLUMNS = `d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempt_count, d.next_attempt_at, d.created_at,
                          d.completed_at, d.locked_until, to_char(d.created_at AT TIME ZONE 'UTC', ${MICROSECOND_INSTANT}) AS position_created_at`;

export class WebhookEndpointService {
  /** Signs the delivery list's cursors. */
  private readonly cursorKey: Buffer;

  constructor(
    private readonly db: DataSource,
    private readonly options: WebhookServiceOptions,
  ) {
    this.cursorKey = cursorKey(options.secretKey);
  }

  /** Registers an endpoint; the signing secret is in this answer only. */
  async create(principal: Principal, body: CreateWebhookEndpointBody): Promise<WebhookEndpointCreated> {
    requireManage(principal);
    const events = [...new Set(body.events)];
    const unknown: FieldError[] = body.events.flatMap((name, i) =>
      KNOWN_EVENTS.has(name) ? [] : [{ path: `events.${i}`, message: `unknown event ${JSON.stringify(name)}; one of ${WEBHOOK_EVENTS.join(", ")}` }],
    );
    if (unknown.length > 0) throw ApiError.validation(unknown);

    const check = await checkWebhookUrl(body.url, { allowPrivate: this.options.allowPrivate, ...(this.options.lookup ? { lookup: this.options.lookup } : {}) });
    if (!check.ok) {
      throw ApiError.validation([{ path: "url", message: `must be a publicly reachable https URL: ${check.reason}` }]);
    }

    let connection: { id: string; slug: string } | null = null;
    if (body.connection !== undefined) {
      await requirePlanFeature(this.db, principal.plan, "connection_webhooks");
      const [found] = await rows<{ id: string; slug: string }>(
        this.db,
        `SELECT id, slug FROM connections WHERE workspace_id = $1 AND slug = $2 AND deleted_at IS NULL`,
        [principal.workspaceId, body.connection],
      );
      if (!found) throw ApiError.notFound("connection");
      connection = found;
    }

    const id = newId("whe");
    const secret = SECRET_PREFIX + randomToken(32);
    const createdAt = new Date();
    await this.db.transaction(async (em) => {
      await em.query(
        `INSERT INTO webhook_endpoints (id, workspace_id, url, description, events, connection_id, secret_sealed, created_at)
         VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8)`,
        [id, principal.workspaceId, body.url, body.description ?? null, events, connection?.id ?? null, encrypt(this.options.secretKey, secret), createdAt],
      );
      await audit(em, principal, "webhook_endpoint.created", { type: "webhook_endpoint", id }, {
        url: body.url,
        events,
        connection: connection?.slug ?? null,
        description: body.description ?? null,
      });
    });
    return {
      ...endpointView({ id, url: body.url, description: body.description ?? null, events, connection_slug: connection?.slug ?? null, created_at: createdAt }),
      secret,
    };
  }

  /** The workspace's endpoints, newest first, without secrets. */
  async list(principal: Principal): Promise<WebhookEndpoint[]> {
    requireManage(principal);
    const found = await rows<EndpointRow>(
      this.db,
      `${ENDPOINT_SELECT} WHERE e.workspace_id = $1 AND e.deleted_at IS NULL ORDER BY e.created_at DESC, e.id DESC`,
      [principal.workspaceId],
    );
    return found.map(endpointView);
  }

  /** Deletes an endpoint; its pending deliveries are canceled. 404 for another workspace's. */
  async delete(principal: Principal, id: string): Promise<void> {
    requireManage(principal);
    await this.db.transaction(async (em) => {
      const [deleted] = await rows<{ id: string; url: string }>(
        em,
        `UPDATE webhook_endpoints SET deleted_at = now() WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING id, url`,
        [id, principal.workspaceId],
      );
      if (!deleted) throw ApiError.notFound("webhook endpoint");
      const canceled = await rows(
        em,
        `UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL, completed_at = now()
          WHERE endpoint_id = $1 AND status = 'pending' RETURNING id`,
        [id],
      );
      await audit(em, principal, "webhook_endpoint.deleted", { type: "webhook_endpoint", id }, { url: deleted.url, canceled_deliveries: canceled.length });
    });
  }

  /** One page of an endpoint's deliveries, newest first, each with all its attempts. */
  async listDeliveries(principal: Principal, endpointId: string, query: ListWebhookDeliveriesQuery): Promise<WebhookDeliveryPage> {
    requireManage(principal, "read");
    await this.endpoint(this.db.manager, principal, endpointId);
    const fingerprint = filterFingerprint(`webhook_deliveries:${principal.workspaceId}:${endpointId}`, { status: query.status });
    const before = query.cursor !== undefined ? decodeCursor(this.cursorKey, query.cursor, fingerprint) : undefined;
    const params: unknown[] = [endpointId];
    const clauses = ["d.endpoint_id = $1"];
    if (query.status !== undefined) {
      params.push(query.status);
      clauses.push(`d.status = $${params.length}`);
    }
    if (before) {
      params.push(before.created_at, before.id);
      clauses.push(`(d.created_at, d.id) < ($${params.length - 1}::timestamptz, $${params.length})`);
    }
    params.push(query.limit + 1);
    const found = await rows<DeliveryRow>(
      this.db,
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE ${clauses.join(" AND ")}
        ORDER BY d.created_at DESC, d.id DESC LIMIT $${params.length}`,
      params,
    );
    const pageRows = found.slice(0, query.limit);
    const attempts = await this.attemptsOf(pageRows.map((d) => d.id));
    const last = pageRows[pageRows.length - 1];
    return {
      data: pageRows.map((d) => deliveryView(d, attempts.get(d.id) ?? [])),
      next_cursor: found.length > query.limit && last ? encodeCursor(this.cursorKey, { created_at: last.position_created_at, id: last.id }, fingerprint) : null,
    };
  }

  /**
   * Delivers the event to the endpoint again, now; a failure is retried on the schedule from its
   * start. 409 while an attempt is in flight (its outcome is about to be recorded).
   */
  async resend(principal: Principal, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    requireManage(principal);
    const view = await this.db.transaction(async (em) => {
      await this.endpoint(em, principal, endpointId);
      const [current] = await rows<DeliveryRow>(
        em,
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.id = $1 AND d.endpoint_id = $2 FOR UPDATE`,
        [deliveryId, endpointId],
      );
      if (!current) throw ApiError.notFound("delivery");
      if (current.locked_until && current.locked_until.getTime() > Date.now()) {
        throw ApiError.invalidState("An attempt for this delivery is in flight; resend once its outcome is recorded.");
      }
      const [updated] = await rows<DeliveryRow>(
        em,
        `UPDATE webhook_deliveries d SET status = 'pending', retry_step = 0, next_attempt_at = now(), completed_at = NULL, locked_until = NULL, claim_token = NULL
          WHERE d.id = $1 RETURNING ${DELIVERY_COLUMNS}`,
        [deliveryId],
      );
      await audit(em, principal, "webhook_delivery.resent", { type: "webhook_delivery", id: deliveryId }, { endpoint_id: endpointId, event_id: current.event_id, previous_status: current.status });
      return updated!;
    });
    this.options.onResend?.();
    const attempts = await this.attemptsOf([view.id]);
    return deliveryView(view, attempts.get(view.id) ?? []);
  }

  private async endpoint(em: EntityManager, principal: Principal, id: string): Promise<void> {
    const [found] = await rows(em, `SELECT id FROM webhook_endpoints WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL`, [id, principal.workspaceId]);
    if (!found) throw ApiError.notFound("webhook endpoint");
  }

  private async attemptsOf(deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
    const byDelivery = new Map<string, AttemptRow[]>();
    if (deliveryIds.length === 0) return byDelivery;
    const found = await rows<AttemptRow>(
      this.db,
      `SELECT delivery_id, attempted_at, trigger, status_code, latency_ms, error_code, error
         FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY id`,
      [deliveryIds],
    );
    for (const a of found) {
      const list = byDelivery.get(a.delivery_id) ?? [];
      list.push(a);
      byDelivery.set(a.delivery_id, list);
    }
    return byDelivery;
  }
}

/**
 * Sessions need a role that may manage webhook endpoints; keys were checked for the scope already.
 * An OAuth token reaches this service only from the tool endpoint, whose mcp:read was checked
 * there: it may read deliveries (list_webhook_deliveries) and change nothing.
 */
function requireManage(principal: Principal, access: "read" | "change" = "change"): void {
  if (principal.kind === "session" && !PERMISSIONS[principal.role].manageWebhooks) {
    throw new ApiError("forbidden", `The ${principal.role} role cannot manage webhook endpoints.`);
  }
  if (principal.kind === "oauth" && access === "change") throw new ApiError("forbidden", "OAuth access tokens change nothing of webhook endpoints.");
}
