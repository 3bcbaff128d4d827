// Role checks over the permission matrix (contract/permissions.ts, shared with the dashboard).
import { ROLES, type Role, type Scope } from "../../contract/common.js";
import { PERMISSIONS } from "../../contract/permissions.js";

export { PERMISSIONS };

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
