// API keys: issue with the scopes the member's role may grant, see the key once, rotate, revoke.
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { IssueApiKeyBody, PERMISSIONS, type IssuableScope, type Role } from "@svc/sdk/contract";
import type { ApiKey } from "@svc/sdk";
import { api, expectOk, queryClient } from "../api";
import { Badge } from "../badges";
import { DangerAction } from "../confirm";
import { CopyableValue } from "../copy";
import { CheckboxGroup, formatDate, InvalidNote, issuesText, Page, ProblemNote } from "../ui";

const KEYS = ["api-keys"] as const;

export function ApiKeys({ role }: { role: Role }) {
  const grantable = PERMISSIONS[role].grantableScopes.filter((s): s is IssuableScope => s !== "usage:read");
  const keys = useQuery({ queryKey: KEYS, queryFn: () => expectOk(api.workspace.listApiKeys()), enabled: PERMISSIONS[role].manageApiKeys });
  const [shown, setShown] = useState<{ name: string; key: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: KEYS });

  const issue = useMutation({
    mutationFn: (body: IssueApiKeyBody) => expectOk(api.workspace.createApiKey({ body })),
    onSuccess: (k) => {
      setShown({ name: k.name, key: k.key });
      void refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: (id: string) => expectOk(api.workspace.rotateApiKey({ params: { id } })),
    onSuccess: (k) => {
      setShown({ name: k.name, key: k.key });
      void refresh();
    },
  });
  const revoke = useMutation({ mutationFn: (id: string) => expectOk(api.workspace.revokeApiKey({ params: { id } })), onSuccess: refresh });

  if (!PERMISSIONS[role].manageApiKeys) {
    return (
      <Page title="API keys">
        <p>Your role ({role}) cannot manage API keys; ask an owner, admin or developer.</p>
      </Page>
    );
  }
  return (
    <Page title="API keys">
      {shown && (
        <div className="secret" role="region" aria-label="New API key">
          <p>
            <strong>{shown.name}</strong>: copy this key now. It is shown only once.
          </p>
          <CopyableValue value={shown.key} label="API key value" what="the API key" />
          <button type="button" onClick={() => setShown(null)}>
            I have copied it
          </button>
        </div>
      )}
      <IssueForm grantable={grantable} pending={issue.isPending} onIssue={(body, reset) => issue.mutate(body, { onSuccess: reset })} />
      <ProblemNote error={issue.error ?? rotate.error ?? revoke.error ?? keys.error} />
      <h2>Keys</h2>
      {keys.data && keys.data.data.length === 0 && <p>No keys yet.</p>}
      <ul className="rows">
        {keys.data?.data.map((k: ApiKey) => (
          <li key={k.id}>
            <span className="row-main">
              <span className="row-title">
                <strong>{k.name}</strong> <code className="slug">{k.prefix}…</code>
                <Badge tone={k.environment === "live" ? "info" : "quiet"}>{k.environment}</Badge>
                {k.revoked_at ? <Badge tone="bad">revoked</Badge> : <Badge tone="good">active</Badge>}
              </span>
              <span className="meta">
                {k.scopes.join(", ")} · created {formatDate(k.created_at)}
                {k.revoked_at ? ` · revoked ${formatDate(k.revoked_at)}` : ""}
              </span>
            </span>
            {!k.revoked_at && (
              <span className="actions">
                <DangerAction
                  label="Rotate"
                  name={`Rotate ${k.name}`}
                  title={`Rotate ${k.name}?`}
                  consequence={<p>A new key with the same scopes is shown once, and this one stops working at once: update every program using it.</p>}
                  confirmLabel="Rotate key"
                  onConfirm={() => rotate.mutate(k.id)}
                />
                <DangerAction
                  label="Revoke"
                  name={`Revoke ${k.name}`}
                  title={`Revoke ${k.name}?`}
                  consequence={<p>Calls using it fail at once, and a revoked key cannot be restored.</p>}
                  confirmLabel="Revoke key"
                  onConfirm={() => revoke.mutate(k.id)}
                />
              </span>
            )}
          </li>
        ))}
      </ul>
    </Page>
  );
}

function IssueForm({ grantable, pending, onIssue }: { grantable: IssuableScope[]; pending: boolean; onIssue: (body: IssueApiKeyBody, reset: () => void) => void }) {
  const [name, setName] = useState("");
  const [environment, setEnvironment] = useState<"live" | "test">("live");
  const [scopes, setScopes] = useState<IssuableScope[]>([]);
  const [invalid, setInvalid] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const parsed = IssueApiKeyBody.safeParse({ name: name.trim(), scopes, environment });
    if (!parsed.success) {
      setInvalid(issuesText(parsed.error.issues, "key"));
      return;
    }
    setInvalid(null);
    onIssue(parsed.data, () => {
      setName("");
      setScopes([]);
    });
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="issue-title">
      <h2 id="issue-title">Issue a key</h2>
      <label htmlFor="key-name">Key name</label>
      <input id="key-name" required maxLength={80} value={name} onChange={(e) => setName(e.target.value)} />
      <label htmlFor="key-env">Environment</label>
      <select id="key-env" value={environment} onChange={(e) => setEnvironment(e.target.value === "test" ? "test" : "live")}>
        <option value="live">live</option>
        <option value="test">test</option>
      </select>
      <CheckboxGroup legend="Scopes" options={grantable} selected={scopes} onChange={setScopes} />
      <InvalidNote message={invalid} />
      <button type="submit" disabled={pending}>
        Issue key
      </button>
    </form>
  );
}
