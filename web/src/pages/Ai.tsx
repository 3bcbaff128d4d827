// AI assistance: the workspace's model-vendor credentials, each connection's policy, and the runs.
// Only on a plan with the `ai` feature (GET /v1/workspace says which); off-plan the page says so
// instead of offering forms the API would refuse with 402.
import { NavLink, Navigate, Route, Routes } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { sessionMayUse, type Role } from "@svc/sdk/contract";
import { api, expectOk } from "../api";
import { Page, ProblemNote } from "../ui";
import { AiCredentials } from "./AiCredentials";
import { AiPolicies } from "./AiPolicies";
import { AiRuns } from "./AiRuns";
import { usePlanRefusal, WORKSPACE } from "./ai-shared";

const SECTIONS = [
  { to: "/ai", label: "Credentials" },
  { to: "/ai/policies", label: "Policies" },
  { to: "/ai/runs", label: "Runs" },
] as const;

export function Ai({ role }: { role: Role }) {
  const overview = useQuery({ queryKey: WORKSPACE, queryFn: () => expectOk(api.workspace.get()) });
  const canWrite = sessionMayUse(role, "ai:write");
  const refusal = usePlanRefusal();
  if (!overview.data) {
    return (
      <Page title="AI assistance">
        {overview.error ? <ProblemNote error={overview.error} /> : <p role="status">Loading…</p>}
      </Page>
    );
  }
  const plan = overview.data.plan;
  if (!plan.limits.features.ai) {
    return (
      <Page title="AI assistance">
        <p role="status" className="notice">
          The {plan.name} plan does not include AI assistance, so this workspace cannot store vendor credentials or set AI policies. The operator
          can move the workspace to a plan that includes it.
        </p>
        <ProblemNote error={refusal} />
        {/* A workspace moved off a plan with AI may still hold credentials: they can be read and erased. */}
        <AiCredentials canWrite={canWrite} role={role} offPlan />
      </Page>
    );
  }
  return (
    <Page title="AI assistance">
      <nav aria-label="AI sections">
        <ul className="tabs">
          {SECTIONS.map((s) => (
            <li key={s.to}>
              <NavLink to={s.to} end>
                {s.label}
              </NavLink>
            </li>
          ))}
        </ul>
      </nav>
      {!canWrite && (
        <p className="notice">
          Your role ({role}) can read the AI settings; an owner or admin changes them.
        </p>
      )}
      <Routes>
        <Route index element={<AiCredentials canWrite={canWrite} role={role} />} />
        <Route path="policies" element={<AiPolicies canWrite={canWrite} />} />
        <Route path="runs" element={<AiRuns />} />
        <Route path="*" element={<Navigate to="/ai" replace />} />
      </Routes>
    </Page>
  );
}
