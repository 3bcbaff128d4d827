// The one plan gate: a 402 that names the feature and the cheapest plan that has it.
import type { DataSource } from "typeorm";
import type { PlanFeature } from "../../contract/common.js";
import { ApiError } from "../http/errors.js";
import { Plan } from "./entities.js";

const FEATURE_COLUMN: Record<PlanFeature, keyof Plan & string> = {
  scheduling: "scheduling",
  connection_webhooks: "connectionWebhooks",
  ai: "ai",
  mcp: "mcp",
  member_management: "memberManagement",
};

export const FEATURE_LABEL: Record<PlanFeature, string> = {
  scheduling: "scheduling",
  connection_webhooks: "per-connection webhook endpoints",
  ai: "AI assistance",
  mcp: "the tool endpoint (MCP)",
  member_management: "member management",
};

export function planHas(plan: Plan, feature: PlanFeature): boolean {
  return Boolean(plan[FEATURE_COLUMN[feature]]);
}

export async function requirePlanFeature(db: DataSource, plan: Plan, feature: PlanFeature): Promise<void> {
  if (planHas(plan, feature)) return;
  const cheapest = await db
    .getRepository(Plan)
    .createQueryBuilder("p")
    .where(`p.${FEATURE_COLUMN[feature]} = :yes`, { yes: true })
    .orderBy("p.rank", "ASC")
    .getOne();
  throw new ApiError("plan_required", `Your plan (${plan.name}) does not include ${FEATURE_LABEL[feature]}; ${cheapest ? `the ${cheapest.name} plan does` : "no plan does"}.`, {
    feature,
    required_plan: cheapest?.id ?? null,
  });
}
