// Members and invitations. Nobody acts above their own role, invitations are single-use links
// bound to one address, and the workspace always keeps an owner (checked under a row lock so two
// owners demoting each other at once cannot both succeed).
import type { DataSource, EntityManager } from "typeorm";
import type { Role } from "../../contract/common.js";
import type { Config } from "../config.js";
import { ApiError } from "../http/errors.js";
import type { SessionPrincipal, SignedInUser } from "../http/principal.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import type { Mailer } from "../mail/mailer.js";
import { randomToken, sha256 } from "../secrets.js";
import { audit } from "../workspace/audit.js";
import { Workspace } from "../workspace/entities.js";
import { assignableRoles } from "../workspace/roles.js";
import { Invitation, Member, User } from "./entities.js";
import type { ApiKeyCache } from "../auth/key-cache.js";

export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

export interface MemberRow {
  id: string;
  user_id: string;
  email: string;
  role: Role;
  joined_at: string;
}

export class TeamService {
  constructor(
    private readonly db: DataSource,
    private readonly mailer: Mailer,
    private readonly config: Config,
    private readonly logger: Logger,
    /** Emptied when a role changes or a member leaves, so that their keys change at once. */
    private readonly keyCache?: ApiKeyCache,
  ) {}

  async list(actor: SessionPrincipal) {
    const members = await this.members(this.db.manager, actor.workspaceId);
    const invitations = await this.db
      .getRepository(Invitation)
      .createQueryBuilder("i")
      .where("i.workspaceId = :ws AND i.acceptedAt IS NULL AND i.revokedAt IS NULL AND i.expiresAt > now()", { ws: actor.workspaceId })
      .orderBy("i.createdAt", "DESC")
      .getMany();
    return { members, invitations, assignableRoles: assignableRoles(actor.role) };
  }

  async invite(actor: SessionPrincipal, rawEmail: string, role: Role): Promise<Invitation> {
    const email = rawEmail.toLowerCase();
    this.requireAuthorityOver(actor, role);
    const token = randomToken(32);
    const invitation = await this.db.transaction(async (em) => {
      const existing: unknown[] = await em.query(
        `SELECT 1 FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND u.email = $2`,
        [actor.workspaceId, email],
      );
      if (existing.length) throw new ApiError("already_member", `${email} is already a member of this workspace.`);
      // A new invitation to the same address replaces the pending one: only the latest link works.
      await em.query(
        `UPDATE invitations SET revoked_at = now() WHERE workspace_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL`,
        [actor.workspaceId, email],
      );
      const inv = em.create(Invitation, {
        id: newId("inv"),
        workspaceId: actor.workspaceId,
        email,
        role,
        tokenDigest: sha256(token),
        invitedBy: actor.userId,
        createdAt: new Date(),
        expiresAt: new Date(Date.now() + INVITATION_TTL_MS),
        acceptedAt: null,
        revokedAt: null,
      });
      await em.insert(Invitation, inv);
      await audit(em, actor, "invitation.created", { type: "invitation", id: inv.id }, { email, role });
      return inv;
    });
    const workspace = await this.db.getRepository(Workspace).findOneByOrFail({ id: actor.workspaceId });
    this.mailer
      .send({
        kind: "invitation",
        to: email,
        subject: `You are invited to ${workspace.name} on svc-gateway`,
        text:
          `${actor.email} invited you to the workspace "${workspace.name}" as ${role}.\n\n` +
          `Accept: ${this.config.webUrl}/invitations/accept?token=${token}\n\n` +
          `Sign in as ${email} first (POST ${this.config.baseUrl}/v1/auth/request-code), then accept with\n` +
          `POST ${this.config.baseUrl}/v1/members/accept {"token": "${token}"}.\nThe invitation expires in 7 days.\n`,
      })
      .catch((err: unknown) => this.logger.error({ err }, "invitation mail failed, every attempt; the invitation was not sent"));
    return invitation;
  }

  async revokeInvitation(actor: SessionPrincipal, id: string): Promise<void> {
    await this.db.transaction(async (em) => {
      const inv = await em.findOne(Invitation, { where: { id, workspaceId: actor.workspaceId }, lock: { mode: "pessimistic_write" } });
      if (!inv || inv.acceptedAt || inv.revokedAt) throw ApiError.notFound("invitation");
      this.requireAuthorityOver(actor, inv.role);
      await em.update(Invitation, { id }, { revokedAt: new Date() });
      await audit(em, actor, "invitation.revoked", { type: "invitation", id });
    });
  }

  /** Joins the invited workspace; the session switches to it. */
  async accept(user: SignedInUser, token: string): Promise<{ workspace: Workspace; role: Role }> {
    return this.db.transaction(async (em) => {
      const inv = await em.findOne(Invitation, { where: { tokenDigest: sha256(token) }, lock: { mode: "pessimistic_write" } });
      if (!inv || inv.acceptedAt || inv.revokedAt || inv.expiresAt.getTime() <= Date.now()) throw ApiError.notFound("invitation");
      if (inv.email !== user.email.toLowerCase()) {
        throw new ApiError("forbidden", "This invitation was sent to a different address; sign in as that address to accept it.");
      }
      const already: unknown[] = await em.query(`SELECT 1 FROM members WHERE workspace_id = $1 AND user_id = $2`, [inv.workspaceId, user.userId]);
      if (already.length) throw new ApiError("already_member", "You are already a member of this workspace.");
      const member = em.create(Member, { id: newId("mem"), workspaceId: inv.workspaceId, userId: user.userId, role: inv.role, createdAt: new Date() });
      await em.insert(Member, member);
      await em.update(Invitation, { id: inv.id }, { acceptedAt: new Date() });
      await em.query(`UPDATE sessions SET workspace_id = $1 WHERE id = $2`, [inv.workspaceId, user.sessionId]);
      const workspace = await em.findOneByOrFail(Workspace, { id: inv.workspaceId });
      await audit(em, { kind: "session", workspaceId: inv.workspaceId, userId: user.userId, sessionId: user.sessionId } as SessionPrincipal, "member.joined", {
        type: "member",
        id: member.id,
      }, { invitation: inv.id, role: inv.role });
      return { workspace, role: inv.role };
    });
  }

  async changeRole(actor: SessionPrincipal, memberId: string, role: Role): Promise<MemberRow> {
    return this.db.transaction(async (em) => {
      const target = await this.lockMember(em, actor, memberId);
      this.requireAuthorityOver(actor, target.role);
      this.requireAuthorityOver(actor, role);
      if (target.role === "owner" && role !== "owner") await this.requireAnotherOwner(em, actor.workspaceId, target.id);
      await em.update(Member, { id: target.id }, { role });
      await audit(em, actor, "member.role_changed", { type: "member", id: target.id }, { from: target.role, to: role });
      const rows = await this.members(em, actor.workspaceId, target.id);
      return rows[0]!;
    }).finally(() => this.keyCache?.invalidate());
  }

  async remove(actor: SessionPrincipal, memberId: string): Promise<void> {
    await this.db.transaction(async (em) => {
      const target = await this.lockMember(em, actor, memberId);
      // Anyone may leave; removing someone else takes authority over their role.
      if (target.userId !== actor.userId) this.requireAuthorityOver(actor, target.role);
      if (target.role === "owner") await this.requireAnotherOwner(em, actor.workspaceId, target.id);
      await em.delete(Member, { id: target.id });
      await em.query(`UPDATE sessions SET workspace_id = NULL WHERE user_id = $1 AND workspace_id = $2`, [target.userId, actor.workspaceId]);
      await audit(em, actor, "member.removed", { type: "member", id: target.id }, { role: target.role });
    }).finally(() => this.keyCache?.invalidate());
  }

  private async lockMember(em: EntityManager, actor: SessionPrincipal, memberId: string): Promise<Member> {
    // Lock every owner row first, in a fixed order, so concurrent demotions serialise.
    await em.query(`SELECT id FROM members WHERE workspace_id = $1 AND role = 'owner' ORDER BY id FOR UPDATE`, [actor.workspaceId]);
    const target = await em.findOne(Member, { where: { id: memberId, workspaceId: actor.workspaceId }, lock: { mode: "pessimistic_write" } });
    if (!target) throw ApiError.notFound("member");
    return target;
  }

  private async requireAnotherOwner(em: EntityManager, workspaceId: string, exceptMemberId: string): Promise<void> {
    const rows: unknown[] = await em.query(`SELECT 1 FROM members WHERE workspace_id = $1 AND role = 'owner' AND id <> $2`, [workspaceId, exceptMemberId]);
    if (rows.length === 0) throw new ApiError("owner_required", "The workspace must keep an owner; make someone else owner first.");
  }

  private requireAuthorityOver(actor: SessionPrincipal, role: Role): void {
    if (!assignableRoles(actor.role).includes(role)) {
      throw new ApiError("forbidden", `The ${actor.role} role cannot assign or act on the ${role} role.`);
    }
  }

  private async members(em: EntityManager, workspaceId: string, memberId?: string): Promise<MemberRow[]> {
    const rows: (Omit<MemberRow, "joined_at"> & { joined_at: Date })[] = await em.query(
      `SELECT m.id, m.user_id, u.email, m.role, m.created_at AS joined_at
         FROM members m JOIN users u ON u.id = m.user_id
        WHERE m.workspace_id = $1 ${memberId ? "AND m.id = $2" : ""}
        ORDER BY m.created_at, m.id`,
      memberId ? [workspaceId, memberId] : [workspaceId],
    );
    return rows.map((r) => ({ ...r, joined_at: r.joined_at.toISOString() }));
  }
}

export function invitationView(i: Invitation) {
  return {
    id: i.id,
    email: i.email,
    role: i.role,
    invited_by: i.invitedBy,
    created_at: i.createdAt.toISOString(),
    expires_at: i.expiresAt.toISOString(),
  };
}

export type { User };
