// The OAuth consent page (`/oauth/consent?request=…`, where /v1/oauth/authorize sends the member):
// which client asks, where the decision goes, what it may do in plain words, what the member's role
// lets them grant. Approve or deny answers the client's redirect address, which the page opens.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";
import type { ConsentDecisionBody } from "@svc/sdk/contract";
import { api, expectOk } from "../api";
import { formatDate, Page, ProblemNote } from "../ui";

export function Consent({ workspace, email }: { workspace: string | null; email: string }) {
  const [params] = useSearchParams();
  const request = params.get("request") ?? "";
  const pending = useQuery({
    queryKey: ["oauth-consent", request],
    queryFn: () => expectOk(api.oauth.consentRequest({ query: { request } })),
    enabled: request !== "",
  });
  const decide = useMutation({
    mutationFn: (decision: ConsentDecisionBody["decision"]) => expectOk(api.oauth.decideConsent({ body: { request, decision } })),
    // The client takes it from here: its redirect URI with the code, or with access_denied.
    onSuccess: ({ redirect_to }) => window.location.assign(redirect_to),
  });

  if (request === "") {
    return (
      <Page title="Allow access to your workspace?">
        <p role="alert" className="problem">
          This address carries no authorization request. Start again from your application.
        </p>
      </Page>
    );
  }
  const r = pending.data;
  const name = r ? (r.client_name ?? r.client_id) : "";
  const deciding = decide.isPending || decide.isSuccess;
  return (
    <Page title="Allow access to your workspace?">
      <ProblemNote error={pending.error ?? decide.error} />
      {pending.isPending && <p role="status">Loading the request…</p>}
      {r && (
        <>
          <p>
            <strong>{name}</strong> asks to use the tools of the workspace <strong>{workspace ?? "(none)"}</strong> on behalf of {email}.
          </p>
          <dl className="facts">
            <dt>Client</dt>
            <dd>
              <code>{r.client_id}</code>
            </dd>
            <dt>Sends you back to</dt>
            <dd>
              <strong>{r.redirect_host}</strong>
            </dd>
            <dt>Decide before</dt>
            <dd>{formatDate(r.expires_at)}</dd>
          </dl>
          <h2>It asks to</h2>
          <ul className="scopes">
            {r.requested_scopes.map((s) => (
              <li key={s.scope}>
                <strong>{s.description}</strong> <code>{s.scope}</code>
                {!r.granted_scopes.includes(s.scope) && <em> (not granted: your role does not allow it)</em>}
              </li>
            ))}
          </ul>
          {r.may_approve ? (
            <p>
              As {r.role}, approving grants <strong>{r.granted_scopes.join(" and ")}</strong>. The access follows your role: if it changes, so does what
              the client may do. You can revoke it under MCP clients.
            </p>
          ) : (
            <p role="note">
              Your role ({r.role}) cannot approve tool access; an owner, admin or developer can. You can deny the request.
            </p>
          )}
          <div className="actions">
            {r.may_approve && (
              <button type="button" onClick={() => decide.mutate("approve")} disabled={deciding}>
                Approve
              </button>
            )}
            <button type="button" className="secondary" onClick={() => decide.mutate("deny")} disabled={deciding}>
              Deny
            </button>
          </div>
          {decide.isSuccess && <p role="status">Returning you to {r.redirect_host}…</p>}
        </>
      )}
    </Page>
  );
}
