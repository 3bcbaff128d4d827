// AI credentials: the list (fingerprints and metadata only, as the API gives them), an add form
// whose key field is emptied after every submit and never shown again, and delete with confirmation.
import { useState, type FormEvent } from "react";
import { useMutation } from "@tanstack/react-query";
import { AiProvider, CreateAiCredentialBody, type Role } from "@svc/sdk/contract";
import type { AiCredential } from "@svc/sdk";
import { api, expectOk, queryClient } from "../api";
import { fieldLimits, limitsText } from "../schema-limits";
import { formatDate, InvalidNote, issuesText, ProblemNote } from "../ui";
import { AI_CHANGE, AI_CREDENTIALS, onPlanRefused, useAiCredentials } from "./ai-shared";
import { DangerAction } from "../confirm";

/** What each provider speaks, and where it goes without a base URL (docs/ai.md). */
const PROVIDERS: Record<AiProvider, string> = {
  vendorone_compatible: "Chat Completions API (default https://api.openai.com/v1; also vLLM, Ollama, OpenRouter)",
  vendortwo: "Messages API (default https://api.anthropic.com)",
};

export function AiCredentials({ canWrite, role, offPlan = false }: { canWrite: boolean; role: Role; offPlan?: boolean }) {
  const list = useAiCredentials();
  const remove = useMutation({
    mutationKey: AI_CHANGE,
    mutationFn: (id: string) => expectOk(api.ai.deleteCredential({ params: { id } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: AI_CREDENTIALS }),
  });
  // Off-plan, only credentials kept from an earlier plan are worth a section (to erase them).
  if (offPlan && !list.error && !list.data?.data.length) return null;
  return (
    <>
      {canWrite && !offPlan && <CreateForm />}
      <h2>Credentials</h2>
      {!canWrite && !offPlan && <p>Your role ({role}) can see the credentials but not add or delete them.</p>}
      <ProblemNote error={list.error ?? remove.error} />
      {list.data && list.data.data.length === 0 && <p>No credentials yet.</p>}
      <ul className="rows" aria-label="AI credentials">
        {list.data?.data.map((c: AiCredential) => (
          <li key={c.id}>
            <span>
              <strong>{c.label}</strong> · {c.provider} · key <code aria-label={`Fingerprint of ${c.label}`}>{c.fingerprint}</code>
              {" · "}
              {c.base_url ?? "default base URL"} · created {formatDate(c.created_at)} · {c.last_used_at ? `last used ${formatDate(c.last_used_at)}` : "never used"}
            </span>
            {canWrite && (
              <span className="actions">
                <DangerAction
                  label="Delete"
                  name={`Delete ${c.label}`}
                  title={`Delete the credential ${c.label}?`}
                  consequence={<p>Its key is erased; policies naming it stop calling the vendor (their runs end credential_missing) until they name another.</p>}
                  confirmLabel="Delete credential"
                  onConfirm={() => remove.mutate(c.id)}
                />
              </span>
            )}
          </li>
        ))}
      </ul>
    </>
  );
}

const LABEL = fieldLimits(CreateAiCredentialBody.shape.label);
const KEY = fieldLimits(CreateAiCredentialBody.shape.api_key);

function CreateForm() {
  const [provider, setProvider] = useState<AiProvider>("vendorone_compatible");
  const [label, setLabel] = useState("");
  const [apiKey, setApiKey] = useState("");
  const [baseUrl, setBaseUrl] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const create = useMutation({
    mutationKey: AI_CHANGE,
    mutationFn: (body: CreateAiCredentialBody) => expectOk(api.ai.createCredential({ body })),
    onSuccess: () => {
      setLabel("");
      setBaseUrl("");
      void queryClient.invalidateQueries({ queryKey: AI_CREDENTIALS });
    },
    onError: onPlanRefused,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const parsed = CreateAiCredentialBody.safeParse({ provider, label: label.trim(), api_key: apiKey, ...(baseUrl.trim() && { base_url: baseUrl.trim() }) });
    // The key leaves the page's state at once, accepted or not: it is typed again if needed (the
    // field's help says so). The previous answer's problem goes with it.
    setApiKey("");
    create.reset();
    setInvalid(parsed.success ? null : issuesText(parsed.error.issues));
    if (parsed.success) create.mutate(parsed.data);
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="cred-title">
      <h2 id="cred-title">Add a credential</h2>
      <label htmlFor="cred-provider">Provider</label>
      <select id="cred-provider" value={provider} onChange={(e) => setProvider(e.target.value as AiProvider)} aria-describedby="cred-provider-help">
        {AiProvider.options.map((p) => (
          <option key={p} value={p}>
            {p}
          </option>
        ))}
      </select>
      <small id="cred-provider-help">{PROVIDERS[provider]}</small>
      <label htmlFor="cred-label">Label</label>
      <input id="cred-label" required maxLength={LABEL.max} value={label} onChange={(e) => setLabel(e.target.value)} aria-describedby="cred-label-help" />
      <small id="cred-label-help">{limitsText(LABEL, " characters")}</small>
      <label htmlFor="cred-key">API key</label>
      <input
        id="cred-key"
        type="password"
        required
        autoComplete="off"
        value={apiKey}
        onChange={(e) => setApiKey(e.target.value)}
        aria-describedby="cred-key-help"
      />
      <small id="cred-key-help">{limitsText(KEY, " characters")}. Stored encrypted and never shown again: the list shows its last four characters. The field is emptied after each submit, also when the credential is refused: type the key again.</small>
      <label htmlFor="cred-base-url">Base URL (optional)</label>
      <input id="cred-base-url" type="url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} aria-describedby="cred-base-url-help" />
      <small id="cred-base-url-help">https only; private and loopback addresses only where the operator allows them.</small>
      <InvalidNote message={invalid} />
      <ProblemNote error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Add credential
      </button>
    </form>
  );
}
