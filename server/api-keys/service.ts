// Issuing, listing, rotating and revoking API keys: dashboard sessions only, and never more
// authority than the issuing member's role may grant.
import { IsNull, type DataSource, type EntityManager } from "typeorm";
import type { IssuableScope, Scope } from "../../contract/common.js";
import { ApiError } from "../http/errors.js";
import type { SessionPrincipal } from "../http/principal.js";
import { newId } from "../ids.js";
import { sha256 } from "../secrets.js";
import { audit } from "../workspace/audit.js";
import { PERMISSIONS } from "../workspace/roles.js";
import { ApiKey } from "./entities.js";
import { generateApiKey, keyPrefix, type KeyEnvironment } from "./key-format.js";
import type { ApiKeyCache } from "../auth/key-cache.js";

export interface IssueKeyInput {
  name: string;
  scopes: IssuableScope[];
  environment: KeyEnvironment;
}

export class ApiKeyService {
  constructor(
    private readonly db: DataSource,
    /** Emptied when a key is revoked here, so that the next request sees it at once. */
    private readonly keyCache?: ApiKeyCache,
  ) {}

  async issue(actor: SessionPrincipal, input: IssueKeyInput): Promise<{ key: ApiKey; plaintext: string }> {
    this.requireKeyManager(actor);
    this.requireGrantable(actor, input.scopes);
    return this.db.transaction(async (em) => {
      const issued = await this.insertKey(em, actor, { ...input, scopes: [...new Set(input.scopes)] });
      await audit(em, actor, "api_key.created", { type: "api_key", id: issued.key.id }, { scopes: issued.key.scopes, environment: issued.key.environment });
      return issued;
    });
  }

  async list(actor: SessionPrincipal): Promise<ApiKey[]> {
    this.requireKeyManager(actor);
    return this.db.getRepository(ApiKey).find({ where: { workspaceId: actor.workspaceId }, order: { createdAt: "DESC", id: "DESC" } });
  }

  async revoke(actor: SessionPrincipal, id: string): Promise<ApiKey> {
    this.requireKeyManager(actor);
    return this.db.transaction(async (em) => {
      const key = await this.find(em, actor, id);
      if (!key.revokedAt) {
        key.revokedAt = new Date();
        await em.update(ApiKey, { id: key.id }, { revokedAt: key.revokedAt });
        await audit(em, actor, "api_key.revoked", { type: "api_key", id: key.id });
      }
      return key;
    }).finally(() => this.keyCache?.invalidate());
  }

  /** A new key with the same name, scopes and environment; the old one is revoked in the same transaction. */
  async rotate(actor: SessionPrincipal, id: string): Promise<{ key: ApiKey; plaintext: string }> {
    this.requireKeyManager(actor);
    return this.db.transaction(async (em) => {
      const old = await this.find(em, actor, id);
      if (old.revokedAt) throw ApiError.notFound("active API key");
      this.requireGrantable(actor, old.scopes);
      const revoked = await em.update(ApiKey, { id: old.id, revokedAt: IsNull() }, { revokedAt: new Date() });
      if (!revoked.affected) throw ApiError.notFound("active API key"); // rotated concurrently
      const issued = await this.insertKey(em, actor, { name: old.name, scopes: old.scopes, environment: old.environment });
      await audit(em, actor, "api_key.rotated", { type: "api_key", id: old.id }, { replaced_by: issued.key.id });
      return issued;
    }).finally(() => this.keyCache?.invalidate());
  }

  private async insertKey(em: EntityManager, actor: SessionPrincipal, input: { name: string; scopes: Scope[]; environment: KeyEnvironment }) {
    const plaintext = generateApiKey(input.environment);
    const key = em.create(ApiKey, {
      id: newId("key"),
      workspaceId: actor.workspaceId,
      name: input.name,
      prefix: keyPrefix(plaintext),
      digest: sha256(plaintext),
      environment: input.environment,
      scopes: input.scopes,
      createdBy: actor.userId,
      createdAt: new Date(),
      lastUsedAt: null,
      revokedAt: null,
    });
    await em.insert(ApiKey, key);
    return { key, plaintext };
  }

  private async find(em: EntityManager, actor: SessionPrincipal, id: string): Promise<ApiKey> {
    const key = await em.findOne(ApiKey, { where: { id, workspaceId: actor.workspaceId }, lock: { mode: "pessimistic_write" } });
    if (!key) throw ApiError.notFound("API key");
    return key;
  }

  private requireKeyManager(actor: SessionPrincipal): void {
    if (!PERMISSIONS[actor.role].manageApiKeys) throw new ApiError("forbidden", `The ${actor.role} role cannot manage API keys.`);
  }

  private requireGrantable(actor: SessionPrincipal, scopes: readonly Scope[]): void {
    const grantable = new Set(PERMISSIONS[actor.role].grantableScopes);
    const denied = scopes.filter((s) => !grantable.has(s));
    if (denied.length) throw new ApiError("forbidden", `The ${actor.role} role cannot grant ${denied.join(", ")}.`, { denied_scopes: denied });
  }
}

export function apiKeyView(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    environment: k.environment,
    scopes: k.scopes,
    created_by: k.createdBy,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}
