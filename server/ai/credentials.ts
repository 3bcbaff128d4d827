// Model-vendor credentials (docs/ai.md). The key is sealed under SECRET_KEY with that key's id
// beside it, never returned, never logged; the list shows only its last four characters.
import { randomUUID } from "node:crypto";
import type { DataSource } from "typeorm";
import type { AiCredential, AiProvider, CreateAiCredentialBody } from "../../contract/index.js";
import { rows } from "../db/rows.js";
import { ApiError } from "../http/errors.js";
import type { Principal } from "../http/principal.js";
import { encrypt, keyId } from "../secrets.js";
import { checkWebhookUrl, type AllowList } from "../outbound/address-policy.js";
import { audit } from "../workspace/audit.js";

export interface AiCredentialOptions {
  secretKey: Buffer;
  /** The outbound address policy's allow-list (private ranges a base_url may reach). */
  allowPrivate: AllowList;
}

interface CredentialRow {
  id: string;
  provider: AiProvider;
  label: string;
  base_url: string | null;
  fingerprint: string;
  created_at: Date;
  last_used_at: Date | null;
}

/** What a list shows of a key: its last four characters, like a card number on a receipt. */
export function fingerprintOf(apiKey: string): string {
  return `…${apiKey.slice(-4)}`;
}

function view(r: CredentialRow): AiCredential {
  return {
    id: r.id,
    provider: r.provider,
    label: r.label,
    base_url: r.base_url,
    fingerprint: r.fingerprint,
    created_at: r.created_at.toISOString(),
    last_used_at: r.last_used_at?.toISOString() ?? null,
  };
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const COLUMNS = `id, provider, label, base_url, fingerprint, created_at, last_used_at`;

export class AiCredentialService {
  constructor(
    private readonly db: DataSource,
    private readonly options: AiCredentialOptions,
  ) {}

  async create(principal: Principal, body: CreateAiCredentialBody): Promise<AiCredential> {
    // The vendor is called from this server: its address goes through the same policy as a
    // webhook's, so a credential cannot point the gateway at its own network.
    if (body.base_url !== undefined) {
      const check = await checkWebhookUrl(body.base_url, { allowPrivate: this.options.allowPrivate });
      if (!check.ok) throw ApiError.validation([{ path: "base_url", message: `must be a publicly reachable https URL: ${check.reason}` }]);
    }
    const row: CredentialRow = {
      id: randomUUID(),
      provider: body.provider,
      label: body.label,
      base_url: body.base_url ?? null,
      fingerprint: fingerprintOf(body.api_key),
      created_at: new Date(),
      last_used_at: null,
    };
    await this.db.transaction(async (em) => {
      await em.query(
        `INSERT INTO ai_credentials (id, workspace_id, provider, label, base_url, api_key_sealed, key_id, fingerprint, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [row.id, principal.workspaceId, row.provider, row.label, row.base_url, encrypt(this.options.secretKey, body.api_key), keyId(this.options.secretKey), row.fingerprint, row.created_at],
      );
      await audit(em, principal, "ai_credential.created", { type: "ai_credential", id: row.id }, { provider: row.provider, label: row.label, base_url: row.base_url });
    });
    return view(row);
  }

  /** The workspace's credentials, newest first: metadata and fingerprints only. */
  async list(principal: Principal): Promise<AiCredential[]> {
    const found = await rows<CredentialRow>(
      this.db,
      `SELECT ${COLUMNS} FROM ai_credentials WHERE workspace_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id DESC`,
      [principal.workspaceId],
    );
    return found.map(view);
  }

  /**
   * Deletes a credential, even one a policy names (docs/ai.md): the sealed key is wiped with it,
   * and that policy's runs end `credential_missing`. 404 for another workspace's.
   */
  async delete(principal: Principal, id: string): Promise<void> {
    // Ids are UUIDs: anything else names no credential (and must not reach a uuid column as a 500).
    if (!UUID.test(id)) throw ApiError.notFound("AI credential");
    await this.db.transaction(async (em) => {
      const [deleted] = await rows<{ id: string; label: string }>(
        em,
        `UPDATE ai_credentials SET deleted_at = now(), api_key_sealed = '' WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING id, label`,
        [id, principal.workspaceId],
      );
      if (!deleted) throw ApiError.notFound("AI credential");
      await audit(em, principal, "ai_credential.deleted", { type: "ai_credential", id }, { label: deleted.label });
    });
  }
}
