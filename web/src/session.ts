// The signed-in member, from GET /v1/auth/session. `null` means signed out; any 401 anywhere sets it
// so, which sends the page back to sign-in without a reload. The page asks only when a session may
// exist: a visitor without the session cookie, or a page already signed out, sends no request that
// could only answer 401 (which the browser would log as an error).
import { useQuery } from "@tanstack/react-query";
import type { Session } from "@svc/sdk";
import { api, queryClient, whenSessionEnds } from "./api";

export const SESSION_KEY = ["session"] as const;

whenSessionEnds(() => {
  // Everything cached belonged to the ended session.
  queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] });
  queryClient.setQueryData(SESSION_KEY, null);
});

/**
 * Whether the page came with the session cookie: the cookie is HttpOnly, so the gateway writes
 * `cookie` or `none` into index.html's `svc-session` meta tag (server/web/index.ts). Served some
 * other way (Vite's dev server), the tag says `unknown` and the page asks.
 */
const servedWithCookie = document.querySelector<HTMLMetaElement>('meta[name="svc-session"]')?.content !== "none";

export function useSession() {
  return useQuery({
    queryKey: SESSION_KEY,
    queryFn: async (): Promise<Session | null> => {
      const known = queryClient.getQueryData<Session | null>(SESSION_KEY);
      // Signed out for certain (no cookie came with the page, or a 401 or sign-out said so): until
      // sign-in sets the session, there is nothing to ask.
      if (known === null || (known === undefined && !servedWithCookie)) return null;
      const res = await api.auth.session();
      if (res.status === 200) return res.body;
      if (res.status === 401) return null;
      throw new Error(`session check answered ${res.status}`);
    },
    // A session that ends elsewhere (logout in another tab, expiry) is noticed within a minute.
    refetchInterval: 60_000,
  });
}
