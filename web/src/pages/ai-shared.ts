// What the AI sections share: the credentials query (listed on one section, chosen from on
// another) and what a 402 from a change means for the page.
import { useMutationState, useQuery } from "@tanstack/react-query";
import { api, expectOk, queryClient, SvcApiError } from "../api";

export const AI_CREDENTIALS = ["ai-credentials"] as const;
/** GET /v1/workspace, as the Overview caches it: the plan says whether AI is offered at all. */
export const WORKSPACE = ["workspace"] as const;

export function useAiCredentials() {
  return useQuery({ queryKey: AI_CREDENTIALS, queryFn: () => expectOk(api.ai.listCredentials()) });
}

/** A change refused 402: the plan changed under the page, which reads it again and stops offering forms. */
export function onPlanRefused(err: unknown): void {
  if (err instanceof SvcApiError && err.code === "plan_required") void queryClient.invalidateQueries({ queryKey: WORKSPACE });
}

/** Every change the AI sections make carries this key, so a refusal outlives the form that made it. */
export const AI_CHANGE = ["ai-change"] as const;

/** The latest 402 of an AI change, shown where the forms were once the plan turns out to lack AI. */
export function usePlanRefusal(): SvcApiError | undefined {
  const errors = useMutationState({ filters: { mutationKey: AI_CHANGE, status: "error" }, select: (m) => m.state.error });
  return errors.filter((e): e is SvcApiError => e instanceof SvcApiError && e.code === "plan_required").at(-1);
}
