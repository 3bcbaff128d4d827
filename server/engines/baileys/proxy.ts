// A connection's socket through a proxy (product.md: a proxy per connection, BAILEYS_PROXY_URL as
// the default for all). SOCKS URLs go through socks-proxy-agent, HTTP(S) ones through an HTTP
// CONNECT tunnel (https-proxy-agent: it tunnels every request, so the network's WebSocket and the
// media fetches alike). The URL may carry the proxy's password: it is stored sealed, and only its
// masked form ever leaves the process.
import type { Agent } from "node:https";
import { HttpsProxyAgent } from "https-proxy-agent";
import { SocksProxyAgent } from "socks-proxy-agent";

/**
 * The agent that carries a socket's connections through the proxy at `url` (typed as the
 * library's options type it, an https Agent: both agents serve http and https requests).
 */
export function proxyAgent(url: string): Agent {
  return (new URL(url).protocol.startsWith("socks") ? new SocksProxyAgent(url) : new HttpsProxyAgent(url)) as unknown as Agent;
}

/** The URL as it may be shown: its password (if any) replaced by `****`. */
export function maskProxyUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "****";
  return parsed.toString().replace(/\/$/, "");
}
