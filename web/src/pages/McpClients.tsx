// Authorized MCP clients: the coding assistants a member let act on the workspace through OAuth,
// with what they may do and when they last did it; revoking cuts their tokens at once.
import { useMutation, useQuery } from "@tanstack/react-query";
import { api, expectOk, queryClient } from "../api";
import { formatDate, Page, ProblemNote } from "../ui";
import { DangerAction } from "../confirm";

const LIST = ["oauth-authorizations"] as const;

export function McpClients() {
  const list = useQuery({ queryKey: LIST, queryFn: () => expectOk(api.oauth.listAuthorizations()) });
  const revoke = useMutation({
    mutationFn: (id: string) => expectOk(api.oauth.revokeAuthorization({ params: { id } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: LIST }),
  });
  return (
    <Page title="MCP clients">
      <p>Assistants you approved to use the workspace's tools (see the MCP endpoint in the docs).</p>
      <ProblemNote error={list.error ?? revoke.error} />
      {list.data && list.data.data.length === 0 && <p>No authorized clients.</p>}
      <ul className="rows">
        {list.data?.data.map((c) => {
          const name = c.client_name ?? c.client_id;
          return (
            <li key={c.id}>
              <span>
                <strong>{name}</strong> · redirects to {c.redirect_host} · {c.scopes.join(", ")} · approved {formatDate(c.created_at)} ·{" "}
                {c.last_used_at ? `last used ${formatDate(c.last_used_at)}` : "never used"}
              </span>
              <DangerAction
                label="Revoke"
                name={`Revoke ${name}`}
                title={`Revoke ${name}?`}
                consequence={<p>Its tokens stop working at once; it must ask for your approval again to use the workspace's tools.</p>}
                confirmLabel="Revoke access"
                onConfirm={() => revoke.mutate(c.id)}
              />
            </li>
          );
        })}
      </ul>
    </Page>
  );
}
