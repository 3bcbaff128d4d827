// Workspaces: creation (CLI and first start), the dashboard's view of plan and usage.
import type { DataSource } from "typeorm";
import type { Role } from "../../contract/common.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";
import { Plan, Workspace } from "./entities.js";
import { messagesThisMonth } from "./usage.js";
import { rows } from "../db/rows.js";
import type { ApiKeyCache } from "../auth/key-cache.js";

export const DEFAULT_PLAN = "pro";

export class WorkspaceService {
  constructor(
    private readonly db: DataSource,
    /** Emptied when the plan changes, so that the next request sees the new plan. */
    private readonly keyCache?: ApiKeyCache,
  ) {}

  /** Creates a workspace owned by `ownerEmail` (creating the user if new). */
  async create(name: string, ownerEmail: string, planId = DEFAULT_PLAN): Promise<Workspace> {
    const email = ownerEmail.toLowerCase();
    return this.db.transaction(async (em) => {
      if (!(await em.findOneBy(Plan, { id: planId }))) throw new ApiError("validation_failed", `Unknown plan ${planId}.`);
      const workspace = em.create(Workspace, { id: newId("wsp"), name, planId, createdAt: new Date() });
      await em.insert(Workspace, workspace);
      await em.query(`INSERT INTO users (id, email) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING`, [newId("usr"), email]);
      await em.query(
        `INSERT INTO members (id, workspace_id, user_id, role) SELECT $1, $2, id, 'owner' FROM users WHERE email = $3`,
        [newId("mem"), workspace.id, email],
      );
      return workspace;
    });
  }

  /** One workspace; the caller's credential named it, so it exists. */
  async get(workspaceId: string): Promise<Workspace> {
    return this.db.getRepository(Workspace).findOneByOrFail({ id: workspaceId });
  }

  /** Every workspace with its plan and owners' addresses (the operator's view, CLI). */
  async listWithOwners(): Promise<{ id: string; name: string; plan: string; owners: string[] }[]> {
    return rows(
      this.db,
      `SELECT w.id, w.name, w.plan_id AS plan,
              coalesce(array_agg(u.email ORDER BY u.email) FILTER (WHERE u.email IS NOT NULL), '{}') AS owners
         FROM workspaces w
         LEFT JOIN members m ON m.workspace_id = w.id AND m.role = 'owner'
         LEFT JOIN users u ON u.id = m.user_id
        GROUP BY w.id ORDER BY w.created_at, w.id`,
    );
  }

  /** Adds `email` (a new user if need be) to an existing workspace with `role`; signs in with a mailed code as usual. */
  async addMember(workspaceId: string, rawEmail: string, role: Role): Promise<{ memberId: string }> {
    const email = rawEmail.toLowerCase();
    return this.db.transaction(async (em) => {
      if (!(await em.findOneBy(Workspace, { id: workspaceId }))) throw ApiError.notFound("workspace");
      await em.query(`INSERT INTO users (id, email) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING`, [newId("usr"), email]);
      const [existing] = await rows<{ role: Role }>(
        em,
        `SELECT m.role FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND u.email = $2`,
        [workspaceId, email],
      );
      if (existing) throw new ApiError("already_member", `${email} is already a member of ${workspaceId}, as ${existing.role}.`);
      const memberId = newId("mem");
      await em.query(`INSERT INTO members (id, workspace_id, user_id, role) SELECT $1, $2, id, $3 FROM users WHERE email = $4`, [memberId, workspaceId, role, email]);
      return { memberId };
    });
  }

  /**
   * Changes a person's sign-in address (in every workspace they belong to: one identity). Their
   * sessions and any open sign-in code end: whoever held the old address is signed out.
   */
  async changeAddress(rawFrom: string, rawTo: string): Promise<{ userId: string; workspaces: number }> {
    const from = rawFrom.toLowerCase();
    const to = rawTo.toLowerCase();
    return this.db.transaction(async (em) => {
      const [user] = await rows<{ id: string }>(em, `SELECT id FROM users WHERE email = $1 FOR UPDATE`, [from]);
      if (!user) throw ApiError.notFound(`user with the address ${from}`);
      if (from === to) throw new ApiError("validation_failed", "The new address is the current one.");
      const [taken] = await rows(em, `SELECT 1 FROM users WHERE email = $1`, [to]);
      if (taken) throw new ApiError("validation_failed", `${to} already signs in as another user; add that user to the workspace instead (member add).`);
      await em.query(`UPDATE users SET email = $2 WHERE id = $1`, [user.id, to]);
      await em.query(`DELETE FROM sessions WHERE user_id = $1`, [user.id]);
      await em.query(`DELETE FROM sign_in_codes WHERE email = $1`, [from]);
      const [count] = await rows<{ n: number }>(em, `SELECT count(*)::int AS n FROM members WHERE user_id = $1`, [user.id]);
      return { userId: user.id, workspaces: count?.n ?? 0 };
    });
  }

  async setPlan(workspaceId: string, planId: string): Promise<void> {
    if (!(await this.db.getRepository(Plan).findOneBy({ id: planId }))) throw new ApiError("validation_failed", `Unknown plan ${planId}.`);
    const result = await this.db.getRepository(Workspace).update({ id: workspaceId }, { planId });
    this.keyCache?.invalidate();
    if (!result.affected) throw ApiError.notFound("workspace");
  }

  async plans(): Promise<Plan[]> {
    return this.db.getRepository(Plan).find({ order: { rank: "ASC" } });
  }

  async isEmpty(): Promise<boolean> {
    return (await this.db.getRepository(Workspace).count()) === 0;
  }

  async overview(workspaceId: string, role: Role) {
    const workspace = await this.db.getRepository(Workspace).findOneByOrFail({ id: workspaceId });
    const plan = await this.db.getRepository(Plan).findOneByOrFail({ id: workspace.planId });
    return {
      workspace: { id: workspace.id, name: workspace.name, created_at: workspace.createdAt.toISOString() },
      role,
      plan: planView(plan),
      usage: { connections: await this.liveConnections(workspaceId), messages_this_month: await messagesThisMonth(this.db.manager, workspaceId) },
    };
  }

  /** Daily counts for the last `days` UTC days, today included; days without traffic count zero. */
  async usage(workspaceId: string, days: number) {
    const rows: { date: string; messages_outbound: number; messages_inbound: number }[] = await this.db.query(
      `SELECT to_char(d.day, 'YYYY-MM-DD') AS date,
              COALESCE(sum(u.messages_outbound), 0)::int AS messages_outbound,
              COALESCE(sum(u.messages_inbound), 0)::int AS messages_inbound
         FROM generate_series((now() AT TIME ZONE 'UTC')::date - ($2::int - 1), (now() AT TIME ZONE 'UTC')::date, interval '1 day') AS d(day)
         LEFT JOIN usage_daily u ON u.workspace_id = $1 AND u.day = d.day::date
        GROUP BY d.day
        ORDER BY d.day`,
      [workspaceId, days],
    );
    const totals = rows.reduce(
      (t, r) => ({ messages_outbound: t.messages_outbound + r.messages_outbound, messages_inbound: t.messages_inbound + r.messages_inbound }),
      { messages_outbound: 0, messages_inbound: 0 },
    );
    return { days, from: rows[0]!.date, to: rows[rows.length - 1]!.date, totals, daily: rows };
  }

  private async liveConnections(workspaceId: string): Promise<number> {
    const [row] = (await this.db.query(`SELECT count(*)::int AS n FROM connections WHERE workspace_id = $1 AND deleted_at IS NULL`, [workspaceId])) as {
      n: number;
    }[];
    return row?.n ?? 0;
  }
}

export function planView(p: Plan) {
  return {
    id: p.id,
    name: p.name,
    limits: {
      connections: p.maxConnections,
      messages_per_month: p.messagesPerMonth,
      features: {
        scheduling: p.scheduling,
        connection_webhooks: p.connectionWebhooks,
        ai: p.ai,
        mcp: p.mcp,
        member_management: p.memberManagement,
      },
    },
  };
}
