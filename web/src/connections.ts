// The workspace's connections, one cached query shared by every page that lists or offers them.
import { useQuery } from "@tanstack/react-query";
import { api, expectOk, queryClient } from "./api";

export const CONNECTIONS_KEY = ["connections"] as const;

/** The connections list; `refetchInterval` polls it (the connections page does while a pairing is open). */
export function useConnections(options: { refetchInterval?: number | false } = {}) {
  return useQuery({ queryKey: CONNECTIONS_KEY, queryFn: () => expectOk(api.connections.list()), refetchInterval: options.refetchInterval ?? false });
}

/** Reads the list again (after a change to a connection). */
export function refreshConnections(): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: CONNECTIONS_KEY });
}
