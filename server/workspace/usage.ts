// Usage counters: one row per workspace, UTC day and shard. A random shard per write keeps
// concurrent sends of one workspace off a single hot row; readers sum the shards.
import type { EntityManager } from "typeorm";

export const USAGE_SHARDS = 16;

export function usageShard(): number {
  return Math.floor(Math.random() * USAGE_SHARDS);
}

/** SQL fragment (for a CTE) that counts one message; parameters: workspace id, shard. */
export function usageIncrementSql(direction: "outbound" | "inbound", workspaceParam: string, shardParam: string): string {
  const column = direction === "outbound" ? "messages_outbound" : "messages_inbound";
  return `INSERT INTO usage_daily (workspace_id, day, shard, ${column})
          VALUES (${workspaceParam}, (now() AT TIME ZONE 'UTC')::date, ${shardParam}, 1)
          ON CONFLICT (workspace_id, day, shard) DO UPDATE SET ${column} = usage_daily.${column} + 1`;
}

/** SQL expression: outbound messages of the workspace `workspaceExpr` this UTC calendar month. */
export function monthOutboundSql(workspaceExpr: string): string {
  return `(SELECT COALESCE(sum(u.messages_outbound), 0)::int FROM usage_daily u
            WHERE u.workspace_id = ${workspaceExpr} AND u.day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date)`;
}

/** Outbound messages this UTC calendar month. */
export async function messagesThisMonth(em: EntityManager, workspaceId: string): Promise<number> {
  const [row] = (await em.query(`SELECT ${monthOutboundSql("$1")} AS n`, [workspaceId])) as { n: number }[];
  return row?.n ?? 0;
}
