// A connection's AI policy: every field of spec 2.6 with the contract's limits and defaults next to
// it, validated by the contract's schema before anything is sent; save replaces the policy (PUT),
// turn off saves it with enabled=false. Without a policy (404) AI is off for the connection.
import { useState, type FormEvent, type ReactNode } from "react";
import { Link } from "react-router";
import { useMutation, useQuery } from "@tanstack/react-query";
import { AiMode, AiPolicyBody, type AiPolicy } from "@svc/sdk/contract";
import { api, expectOk, queryClient, SvcApiError } from "../api";
import { useConnections } from "../connections";
import { fieldLimits, limitsText } from "../schema-limits";
import { ConnectionOptions, formatDate, ProblemNote } from "../ui";
import { AI_CHANGE, onPlanRefused, useAiCredentials } from "./ai-shared";

type NumberField = "max_context_bytes" | "max_output_tokens" | "monthly_cost_limit_micros" | "input_cost_micros_per_million" | "output_cost_micros_per_million";
type Draft = { credential_id: string; enabled: boolean; mode: AiMode; model: string; system_instruction: string } & Record<NumberField, string>;
type Field = keyof Draft;

const LIMITS = Object.fromEntries(Object.entries(AiPolicyBody.shape).map(([k, s]) => [k, fieldLimits(s)])) as Record<Field, ReturnType<typeof fieldLimits>>;

const policyKey = (slug: string) => ["ai-policy", slug] as const;

function draftOf(policy: AiPolicy | null): Draft {
  const num = (f: NumberField) => {
    const v = policy ? policy[f] : LIMITS[f].defaultValue;
    return typeof v === "number" ? String(v) : "";
  };
  return {
    credential_id: policy?.credential_id ?? "",
    enabled: policy?.enabled ?? true,
    mode: policy?.mode ?? "draft",
    model: policy?.model ?? "",
    system_instruction: policy?.system_instruction ?? "",
    max_context_bytes: num("max_context_bytes"),
    max_output_tokens: num("max_output_tokens"),
    monthly_cost_limit_micros: num("monthly_cost_limit_micros"),
    input_cost_micros_per_million: num("input_cost_micros_per_million"),
    output_cost_micros_per_million: num("output_cost_micros_per_million"),
  };
}

/** The draft as the PUT body, before the schema's verdict: an empty number takes its default, an empty monthly limit is null. */
function bodyOf(d: Draft): Record<string, unknown> {
  const num = (s: string) => (s.trim() === "" ? undefined : Number(s.trim()));
  return {
    credential_id: d.credential_id,
    enabled: d.enabled,
    mode: d.mode,
    model: d.model.trim(),
    system_instruction: d.system_instruction,
    max_context_bytes: num(d.max_context_bytes),
    max_output_tokens: num(d.max_output_tokens),
    monthly_cost_limit_micros: num(d.monthly_cost_limit_micros) ?? null,
    input_cost_micros_per_million: num(d.input_cost_micros_per_million),
    output_cost_micros_per_million: num(d.output_cost_micros_per_million),
  };
}

/** Field errors by field name, from the schema's issues or the API's problem (`body.max_output_tokens` → max_output_tokens). */
type FieldErrors = Partial<Record<string, string>>;
function errorsOfIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): FieldErrors {
  const out: FieldErrors = {};
  for (const i of issues) out[String(i.path[0] ?? "")] ??= i.message;
  return out;
}
function errorsOfProblem(error: unknown): FieldErrors {
  if (!(error instanceof SvcApiError)) return {};
  const out: FieldErrors = {};
  for (const e of error.errors) out[e.path.replace(/^body\./, "").split(".")[0]!] ??= e.message;
  return out;
}

export function AiPolicies({ canWrite }: { canWrite: boolean }) {
  const connections = useConnections();
  const [picked, setPicked] = useState<string | null>(null);
  const slug = picked ?? connections.data?.data[0]?.slug ?? null;
  return (
    <>
      <h2>Policies</h2>
      <ProblemNote error={connections.error} />
      {connections.data && connections.data.data.length === 0 && (
        <p>
          No connections yet: <Link to="/connections">create one</Link> first; AI answers on a connection.
        </p>
      )}
      {slug && (
        <>
          <form className="filters" aria-label="Connection" onSubmit={(e) => e.preventDefault()}>
            <label htmlFor="pol-connection">Connection</label>
            <select id="pol-connection" value={slug} onChange={(e) => setPicked(e.target.value)}>
              <ConnectionOptions connections={connections.data?.data} />
            </select>
          </form>
          <PolicyOf key={slug} slug={slug} canWrite={canWrite} />
        </>
      )}
    </>
  );
}

function PolicyOf({ slug, canWrite }: { slug: string; canWrite: boolean }) {
  const policy = useQuery({
    queryKey: policyKey(slug),
    queryFn: async (): Promise<AiPolicy | null> => {
      const res = await api.ai.getPolicy({ params: { connection: slug } });
      // The connection comes from the list: its 404 means no policy, AI off.
      if (res.status === 404) return null;
      return expectOk(res);
    },
  });
  if (policy.error) return <ProblemNote error={policy.error} />;
  if (policy.data === undefined) return <p role="status">Loading…</p>;
  return <PolicyForm slug={slug} policy={policy.data} canWrite={canWrite} />;
}

function PolicyForm({ slug, policy, canWrite }: { slug: string; policy: AiPolicy | null; canWrite: boolean }) {
  const credentials = useAiCredentials();
  const [draft, setDraft] = useState<Draft>(() => draftOf(policy));
  const [invalid, setInvalid] = useState<FieldErrors>({});
  const save = useMutation({
    mutationKey: AI_CHANGE,
    mutationFn: (body: AiPolicyBody) => expectOk(api.ai.setPolicy({ params: { connection: slug }, body })),
    onSuccess: (saved) => {
      queryClient.setQueryData(policyKey(slug), saved);
      setDraft(draftOf(saved));
    },
    onError: onPlanRefused,
  });
  const errors: FieldErrors = { ...errorsOfProblem(save.error), ...invalid };
  const set = <K extends Field>(k: K, v: Draft[K]) => setDraft({ ...draft, [k]: v });
  const send = (d: Draft) => {
    const parsed = AiPolicyBody.safeParse(bodyOf(d));
    const issues = parsed.success ? {} : errorsOfIssues(parsed.error.issues);
    // "Invalid uuid" says little about an empty choice.
    if (d.credential_id === "") issues.credential_id = "choose one (add one on the Credentials section first if there is none)";
    setInvalid(issues);
    save.reset();
    if (parsed.success) save.mutate(parsed.data);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    send(draft);
  };
  // The saved policy, turned off: edits not yet saved are not sent along.
  const turnOff = () => policy && send({ ...draftOf(policy), enabled: false });
  const num = (f: NumberField, label: string, help: ReactNode) => (
    <Row field={f} label={label} help={help} error={errors[f]}>
      {(a11y) => (
        <input {...a11y} type="number" inputMode="numeric" step={1} min={LIMITS[f].min} max={LIMITS[f].max} value={draft[f]} onChange={(e) => set(f, e.target.value)} />
      )}
    </Row>
  );
  const liveCredentials = credentials.data?.data ?? [];
  const credentialGone = draft.credential_id !== "" && credentials.data && !liveCredentials.some((c) => c.id === draft.credential_id);

  return (
    <form onSubmit={submit} noValidate aria-labelledby="pol-title">
      <h3 id="pol-title">Policy of {slug}</h3>
      <p role="status" className="notice">
        {policy === null
          ? "AI is off for this connection: it has no policy."
          : policy.enabled
            ? `AI is on for this connection (${policy.mode} mode), saved ${formatDate(policy.updated_at)}.`
            : `AI is off for this connection: its policy is saved turned off (${formatDate(policy.updated_at)}).`}
      </p>
      <ProblemNote error={credentials.error} />
      <fieldset className="plain" disabled={!canWrite}>
        <legend className="visually-hidden">Policy fields</legend>
        <Row field="credential_id" label="Credential" help={canWrite ? <Link to="/ai">Add credentials on the Credentials page.</Link> : "The vendor key this connection's runs use."} error={errors.credential_id}>
          {(a11y) => (
            <select {...a11y} value={draft.credential_id} onChange={(e) => set("credential_id", e.target.value)}>
              <option value="">Choose a credential</option>
              {credentialGone && <option value={draft.credential_id}>A deleted credential: choose another</option>}
              {liveCredentials.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.label} ({c.provider}, {c.fingerprint})
                </option>
              ))}
            </select>
          )}
        </Row>
        <label className="check">
          <input type="checkbox" checked={draft.enabled} onChange={(e) => set("enabled", e.target.checked)} />
          Enabled: answer inbound one-to-one messages on this connection
        </label>
        <Row field="mode" label="Mode" help="draft: the reply is an ai.draft.created event for a person to send; auto: it is sent." error={errors.mode}>
          {(a11y) => (
            <select {...a11y} value={draft.mode} onChange={(e) => set("mode", e.target.value as AiMode)}>
              {AiMode.options.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          )}
        </Row>
        <Row field="model" label="Model" help={`${limitsText(LIMITS.model, " characters")}, as the vendor names it`} error={errors.model}>
          {(a11y) => <input {...a11y} maxLength={LIMITS.model.max} value={draft.model} onChange={(e) => set("model", e.target.value)} />}
        </Row>
        <Row field="system_instruction" label="System instruction" help={limitsText(LIMITS.system_instruction, " characters")} error={errors.system_instruction}>
          {(a11y) => <textarea {...a11y} rows={4} maxLength={LIMITS.system_instruction.max} value={draft.system_instruction} onChange={(e) => set("system_instruction", e.target.value)} />}
        </Row>
        {num("max_context_bytes", "Max context (bytes)", `${limitsText(LIMITS.max_context_bytes)}: the conversation and instruction sent, in UTF-8 bytes`)}
        {num("max_output_tokens", "Max output tokens", `${limitsText(LIMITS.max_output_tokens)}: the reply's limit at the vendor`)}
        <fieldset>
          <legend>Cost</legend>
          <p className="help">
            Prices are in micros (millionths of your currency unit) per million tokens, as the vendor bills them; a run costs input tokens × input
            price / 1,000,000 plus the same for output, rounded up.
          </p>
          {num("input_cost_micros_per_million", "Input price (micros per million tokens)", limitsText(LIMITS.input_cost_micros_per_million))}
          {num("output_cost_micros_per_million", "Output price (micros per million tokens)", limitsText(LIMITS.output_cost_micros_per_million))}
          {num(
            "monthly_cost_limit_micros",
            "Monthly cost limit (micros)",
            `${limitsText(LIMITS.monthly_cost_limit_micros)}. Empty: no limit. 0: refuse every run. Otherwise a run that could pass it this calendar month is refused before the vendor is called.`,
          )}
        </fieldset>
      </fieldset>
      {Object.keys(invalid).length > 0 && (
        <p role="alert" className="problem">
          Not saved: correct the fields marked above.
        </p>
      )}
      <ProblemNote error={save.error} />
      {save.isSuccess && <p role="status">Saved.</p>}
      {canWrite && (
        <span className="actions">
          <button type="submit" disabled={save.isPending}>
            Save policy
          </button>
          {policy?.enabled && (
            <button type="button" onClick={turnOff} disabled={save.isPending}>
              Turn AI off
            </button>
          )}
        </span>
      )}
    </form>
  );
}

type A11y = { id: string; "aria-describedby": string; "aria-invalid": boolean };

/** One labelled field with its limits below it and, when refused, the reason. */
function Row({ field, label, help, error, children }: { field: Field; label: string; help: ReactNode; error: string | undefined; children: (a11y: A11y) => ReactNode }) {
  const id = `pol-${field}`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, "aria-describedby": error ? `${id}-help ${id}-error` : `${id}-help`, "aria-invalid": Boolean(error) })}
      <small id={`${id}-help`}>{help}</small>
      {error && (
        <small id={`${id}-error`} className="field-error">
          {label}: {error}
        </small>
      )}
    </div>
  );
}
