// The page the authorization endpoint shows instead of redirecting (RFC 9700 4.11.2): an error
// about a client that no member has approved with this redirect URI is told to the person in the
// browser, never sent to the URI, or the endpoint would send anyone's browser to any https address
// its author registered (an open redirect). Plain HTML, no script, nothing loaded from anywhere.
import type { Response } from "express";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export interface AuthorizationErrorPage {
  error: string;
  description: string;
  /** The application as it named itself (or its client_id), if the request named a known one. */
  client?: string;
  /** Why the browser is not sent back to the application. */
  why: string;
}

export function sendAuthorizationErrorPage(res: Response, page: AuthorizationErrorPage): void {
  const client = page.client ? `<p>Application: <strong>${escapeHtml(page.client)}</strong></p>` : "";
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer"><title>Authorization refused</title></head>
<body>
<h1>This authorization request cannot be completed</h1>
${client}<p><code>${escapeHtml(page.error)}</code>: ${escapeHtml(page.description)}</p>
<p>${escapeHtml(page.why)} Return to the application and start again; if this happens again, tell its author.</p>
</body>
</html>
`;
  res
    .status(400)
    .setHeader("Cache-Control", "no-store")
    .setHeader("Content-Security-Policy", "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    .setHeader("Referrer-Policy", "no-referrer")
    .setHeader("X-Frame-Options", "DENY")
    .type("html")
    .send(html);
}
