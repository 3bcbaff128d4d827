// The permission matrix of product.md, as data. Every role check in the project reads this table.
import { ISSUABLE_SCOPES, ROLES, type Role, type Scope } from "../../contract/common.js";

interface RolePermissions {
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
 * Authority order for member management. viewer and billing are peers of equal rank below
 * developer: neither outranks the other, and neither can manage anyone.
 */
const RANK: Record<Role, number> = { owner: 4, admin: 3, developer: 2, viewer: 1, billing: 1 };

/** Roles `actor` may invite, assign, or act on (change or remove a member holding it). */
export function assignableRoles(actor: Role): Role[] {
  const ceiling = PERMISSIONS[actor].manageMembersUpTo;
  if (!ceiling) return [];
  return ROLES.filter((r) => RANK[r] <= RANK[ceiling]);
}

/** A key's effective scopes: its own, capped by what its issuer's current role may grant. */
export function effectiveScopes(keyScopes: readonly Scope[], issuerRole: Role): Scope[] {
  const grantable = new Set(PERMISSIONS[issuerRole].grantableScopes);
  return keyScopes.filter((s) => grantable.has(s));
}
