// The signed-in member, from GET /v1/auth/session. `null` means signed out; any 401 anywhere sets it
// so, which sends the page back to sign-in without a reload.
import { useQuery } from "@tanstack/react-query";
import type { Session } from "@svc/sdk";
import { api, queryClient, whenSessionEnds } from "./api";

export const SESSION_KEY = ["session"] as const;

whenSessionEnds(() => {
  // Everything cached belonged to the ended session.
  queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] });
  queryClient.setQueryData(SESSION_KEY, null);
});

export function useSession() {
  return useQuery({
    queryKey: SESSION_KEY,
    queryFn: async (): Promise<Session | null> => {
      const res = await api.auth.session();
      if (res.status === 200) return res.body;
      if (res.status === 401) return null;
      throw new Error(`session check answered ${res.status}`);
    },
    // A session that ends elsewhere (logout in another tab, expiry) is noticed within a minute.
    refetchInterval: 60_000,
  });
}
