// Workspaces: creation (CLI and first start), the dashboard's view of plan and usage.
import type { DataSource } from "typeorm";
import type { Role } from "../../contract/common.js";
import { ApiError } from "../http/errors.js";
import { newId } from "../ids.js";
import { Plan, Workspace } from "./entities.js";
import { messagesThisMonth } from "./usage.js";
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
