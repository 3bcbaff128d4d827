import { Column, Entity, PrimaryColumn } from "typeorm";
import type { ConnectionState, PairingMethod } from "../../contract/index.js";

export type StoredConnectionState = ConnectionState | "deleted";

@Entity("connections")
export class Connection {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "workspace_id" }) workspaceId!: string;
  @Column({ type: "text" }) slug!: string;
  @Column({ type: "text", nullable: true }) name!: string | null;
  @Column({ type: "text" }) state!: StoredConnectionState;
  /** Whether the engine reports a linked device; decides where resume returns to. */
  @Column({ type: "boolean" }) linked!: boolean;
  @Column({ type: "text", nullable: true }) phone!: string | null;
  /** Why the engine says the connection is not connected (replaced_elsewhere, …); null otherwise. */
  @Column({ type: "text", name: "state_detail", nullable: true }) detail!: string | null;
  @Column({ type: "text" }) transport!: string;
  @Column({ type: "text", name: "callback_nonce" }) callbackNonce!: string;
  @Column({ type: "bytea", name: "callback_token_digest" }) callbackTokenDigest!: Buffer;
  /** The proxy its engine's socket goes through (it may carry a password): sealed; null for none. */
  @Column({ type: "text", name: "proxy_url_sealed", nullable: true }) proxyUrlSealed!: string | null;
  /** The network restricted the account: its sending pauses (states.ts, restrictionHolds) until lifted, `restrictedUntil` or a resume. */
  @Column({ type: "boolean", default: false }) restricted!: boolean;
  @Column({ type: "timestamptz", name: "restricted_until", nullable: true }) restrictedUntil!: Date | null;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
  @Column({ type: "timestamptz", name: "updated_at", default: () => "now()" }) updatedAt!: Date;
  @Column({ type: "timestamptz", name: "deleted_at", nullable: true }) deletedAt!: Date | null;
}

@Entity("pairing_grants")
export class PairingGrant {
  @PrimaryColumn({ type: "text" }) id!: string;
  @Column({ type: "text", name: "connection_id" }) connectionId!: string;
  /** What the grant shows when redeemed: a QR code of the payload, or the payload as a code to type. */
  @Column({ type: "text", default: "qr" }) method!: PairingMethod;
  /** The pairing payload is a credential (whoever scans it links a device): stored encrypted. */
  @Column({ type: "text", name: "payload_sealed" }) payloadSealed!: string;
  @Column({ type: "timestamptz", name: "expires_at" }) expiresAt!: Date;
  @Column({ type: "timestamptz", name: "created_at", default: () => "now()" }) createdAt!: Date;
}

/**
 * The columns connectionFromRow reads, for statements that name them (`c.id, c.workspace_id, …`)
 * instead of selecting `c.*`: a prepared statement's result must keep its shape when a later
 * migration adds a column, or PostgreSQL refuses to run it again (server/db/prepared.ts).
 */
export function connectionColumns(alias: string): string {
  return CONNECTION_COLUMNS.map((c) => `${alias}.${c}`).join(", ");
}

const CONNECTION_COLUMNS = [
  "id", "workspace_id", "slug", "name", "state", "linked", "phone", "state_detail", "transport", "callback_nonce", "callback_token_digest",
  "proxy_url_sealed", "restricted", "restricted_until", "created_at", "updated_at", "deleted_at",
] as const;

/** A raw `connections` row (snake_case, as selected with `SELECT *` or connectionColumns()) as the entity's fields. */
export function connectionFromRow(r: Record<string, unknown>): Partial<Connection> {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    slug: r.slug as string,
    name: r.name as string | null,
    state: r.state as Connection["state"],
    linked: r.linked as boolean,
    phone: r.phone as string | null,
    detail: (r.state_detail as string | null | undefined) ?? null,
    transport: r.transport as string,
    callbackNonce: r.callback_nonce as string,
    callbackTokenDigest: r.callback_token_digest as Buffer,
    proxyUrlSealed: (r.proxy_url_sealed as string | null | undefined) ?? null,
    restricted: (r.restricted as boolean | undefined) ?? false,
    restrictedUntil: (r.restricted_until as Date | null | undefined) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    deletedAt: r.deleted_at as Date | null,
  };
}
