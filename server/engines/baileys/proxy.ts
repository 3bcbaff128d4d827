// A connection's socket through a proxy (docs/engines.md: a proxy per connection, BAILEYS_PROXY_URL
// as the default for all). SOCKS URLs go through socks-proxy-agent, HTTP(S) ones through an HTTP
// CONNECT tunnel (https-proxy-agent: it tunnels every request, so the network's WebSocket and the
// media fetches alike). The URL may carry the proxy's password: it is stored sealed, and only its
// masked form ever leaves the process.
import type { Agent } from "node:https";

/**
 * The agent that carries a socket's connections through the proxy at `url` (typed as the
 * library's options type it, an https Agent: both agents serve http and https requests). The
 * agents' modules load with the first proxied socket: a gateway without proxies never loads them.
 */
export async function proxyAgent(url: string): Promise<Agent> {
  if (new URL(url).protocol.startsWith("socks")) return new (await import("socks-proxy-agent")).SocksProxyAgent(url) as unknown as Agent;
  return new (await import("https-proxy-agent")).HttpsProxyAgent(url) as unknown as Agent;
}

/** The URL as it may be shown: its password (if any) replaced by `****`. */
export function maskProxyUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "****";
  return parsed.toString().replace(/\/$/, "");
}
