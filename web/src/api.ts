// The dashboard's only way to the API: the typed SDK, same origin, with the HttpOnly session
// cookie the browser attaches by itself (nothing secret is readable by this code).
import { createClient, expectOk, SvcApiError } from "@svc/sdk";
import { QueryClient } from "@tanstack/react-query";

/** Called when any answer says the session is gone (401), so the page returns to sign-in. */
let onSessionEnded: () => void = () => {};
export function whenSessionEnds(handler: () => void): void {
  onSessionEnded = handler;
}

export const api = createClient({
  baseUrl: window.location.origin,
  credentials: "same-origin",
  // A dashboard waits for the person, not for retries: one quick retry of what is safe.
  maxRetries: 1,
  timeout: 20_000,
  fetch: async (input, init) => {
    const res = await fetch(input, init);
    if (res.status === 401 && !String(input).includes("/v1/auth/verify")) onSessionEnded();
    return res;
  },
});

export { expectOk, SvcApiError };

export const queryClient = new QueryClient({
  defaultOptions: {
    // Refetched on every visit to a page: a session ended elsewhere shows at the next click.
    queries: { retry: false, refetchOnWindowFocus: true, staleTime: 0 },
  },
});
