// OAuth as one service (the routes of handlers.ts call it): clients, approvals, tokens and
// grants over this gateway's database. The statements live in clients.ts and grants.ts.
import type { DataSource } from "typeorm";
import { DatabaseRateLimiter, type LimitDecision } from "../http/rate-limit.js";
import { clientFromMetadataDocument, findClient, isMetadataDocumentId, registerClient, type OAuthClient, type Registration } from "./clients.js";
import { approve, approvedRedirect, exchangeCode, listGrants, refresh, revokeGrant, type Approval, type AuthorizedClient, type CodeExchange } from "./grants.js";
import type { IssuedTokens } from "./tokens.js";
import type { UrlCheckOptions } from "../outbound/address-policy.js";

/** Registrations one client address may make in an hour. */
export const REGISTRATIONS_PER_HOUR = 20;

export class OAuthService {
  // Across processes, like the sign-in limits: registration is unauthenticated.
  private readonly registrations: DatabaseRateLimiter;

  constructor(
    private readonly db: DataSource,
    /** Where a client's metadata document may be fetched from (WEBHOOK_ALLOW_PRIVATE). */
    private readonly outbound: UrlCheckOptions,
  ) {
    this.registrations = new DatabaseRateLimiter(db);
  }

  registrationAllowed(ip: string): Promise<LimitDecision> {
    return this.registrations.hit(`oauth-register:${ip}`, REGISTRATIONS_PER_HOUR, 3600_000);
  }

  register(body: Registration): Promise<OAuthClient> {
    return registerClient(this.db, body);
  }

  /** A registered client, or one whose id is the address of its metadata document. */
  client(clientId: string): Promise<OAuthClient | null> {
    return isMetadataDocumentId(clientId) ? clientFromMetadataDocument(clientId, this.outbound) : findClient(this.db, clientId);
  }

  approvedRedirect(clientId: string, redirectUri: string): Promise<boolean> {
    return approvedRedirect(this.db, clientId, redirectUri);
  }

  approve(a: Approval): Promise<string> {
    return approve(this.db, a);
  }

  exchangeCode(x: CodeExchange): Promise<IssuedTokens> {
    return exchangeCode(this.db, x);
  }

  refresh(token: string, clientId: string, resource: string | undefined): Promise<IssuedTokens> {
    return refresh(this.db, token, clientId, resource);
  }

  listGrants(workspaceId: string, userId: string): Promise<AuthorizedClient[]> {
    return listGrants(this.db, workspaceId, userId);
  }

  revokeGrant(workspaceId: string, userId: string, id: string): Promise<boolean> {
    return revokeGrant(this.db, workspaceId, userId, id);
  }
}
