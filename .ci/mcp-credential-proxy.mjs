// A loopback proxy that adds a credential to every request: the MCP conformance runner sends none.
// Usage: node mcp-credential-proxy.mjs <listen port> <target origin> <Authorization value>
// Headers (Host and Origin included, so DNS-rebinding scenarios reach the gateway as sent) and
// bodies pass through untouched.
import http from "node:http";
import process from "node:process";
import { URL } from "node:url";

const [port, target, authorization] = process.argv.slice(2);
const upstream = new URL(target);
http
  .createServer((req, res) => {
    const forward = http.request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, authorization } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => res.writeHead(502).end());
    req.pipe(forward);
  })
  .listen(Number(port), "127.0.0.1");
