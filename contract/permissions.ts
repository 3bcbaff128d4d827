// The permission matrix, as data. Every role check reads this table: the server's
// (server/workspace/roles.ts) and the dashboard's, which offers only what the member may grant.
import { ISSUABLE_SCOPES, type Role, type Scope } from "./common.js";

export interface RolePermissions {
  manageApiKeys: boolean;
  grantableScopes: readonly Scope[];
  manageWebhooks: boolean;
  /** The highest role this role may invite, assign or act on; null: no member management. */
  manageMembersUpTo: Role | null;
  approveOAuth: boolean;
}

const ALL_BUT_AI_WRITE = ISSUABLE_SCOPES.filter((s) => s !== "ai:write");

export const PERMISSIONS: Record<Role, RolePermissions> = {
  owner: { manageApiKeys: true, grantableScopes: ISSUABLE_SCOPES, manageWebhooks: true, manageMembersUpTo: "owner", approveOAuth: true },
  admin: { manageApiKeys: true, grantableScopes: ISSUABLE_SCOPES, manageWebhooks: true, manageMembersUpTo: "admin", approveOAuth: true },
  developer: { manageApiKeys: true, grantableScopes: ALL_BUT_AI_WRITE, manageWebhooks: true, manageMembersUpTo: null, approveOAuth: true },
  viewer: { manageApiKeys: false, grantableScopes: [], manageWebhooks: false, manageMembersUpTo: null, approveOAuth: false },
  billing: { manageApiKeys: false, grantableScopes: [], manageWebhooks: false, manageMembersUpTo: null, approveOAuth: false },
};


/**
 * Whether a member's session may use a route that a key would need `scope` for: every member
 * reads; changes need a role that may grant the scope (so a viewer reads connections, a developer
 * pairs them).
 */
export function sessionMayUse(role: Role, scope: Scope): boolean {
  return scope.endsWith(":read") || PERMISSIONS[role].grantableScopes.includes(scope);
}
