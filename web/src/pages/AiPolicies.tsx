// A connection's AI policy: every field of docs/ai.md with the contract's limits and defaults next to
// it, validated by the contract's schema before anything is sent; save replaces the policy (PUT),
// turn off saves it with enabled=false. Without a policy AI is off for the connection. Prices and
// the monthly limit are typed in currency units and sent in micros (format.ts converts exactly).
import { useState, type FormEvent, type ReactNode } from "react";
import { Link } from "react-router";
import { useMutation, useQuery } from "@tanstack/react-query";
import { AiMode, AiPolicyBody, type AiPolicy, type AiPolicyList } from "@svc/sdk/contract";
import { api, expectOk, queryClient, SvcApiError } from "../api";
import { useConnections } from "../connections";
import { formatUnits, parseUnits, unitsInputValue } from "../format";
import { fieldLimits, limitsText } from "../schema-limits";
import { ConnectionOptions, formatDate, ProblemNote } from "../ui";
import { AI_CHANGE, onPlanRefused, useAiCredentials } from "./ai-shared";

type CountField = "max_context_bytes" | "max_output_tokens";
/** Micros in the API, currency units on the page. */
type MoneyField = "monthly_cost_limit_micros" | "input_cost_micros_per_million" | "output_cost_micros_per_million";
type NumberField = CountField | MoneyField;
type Draft = { credential_id: string; enabled: boolean; mode: AiMode; model: string; system_instruction: string } & Record<NumberField, string>;
type Field = keyof Draft;

const LIMITS = Object.fromEntries(Object.entries(AiPolicyBody.shape).map(([k, s]) => [k, fieldLimits(s)])) as Record<Field, ReturnType<typeof fieldLimits>>;

/** Every policy of the workspace at once (GET /v1/ai/policies): a connection without one is simply absent, no 404 to ask for. */
const POLICIES = ["ai-policies"] as const;

function draftOf(policy: AiPolicy | null): Draft {
  const num = (f: CountField) => {
    const v = policy ? policy[f] : LIMITS[f].defaultValue;
    return typeof v === "number" ? String(v) : "";
  };
  const money = (f: MoneyField) => {
    const v = policy ? policy[f] : LIMITS[f].defaultValue;
    return typeof v === "number" ? unitsInputValue(v) : "";
  };
  return {
    credential_id: policy?.credential_id ?? "",
    enabled: policy?.enabled ?? true,
    mode: policy?.mode ?? "draft",
    model: policy?.model ?? "",
    system_instruction: policy?.system_instruction ?? "",
    max_context_bytes: num("max_context_bytes"),
    max_output_tokens: num("max_output_tokens"),
    monthly_cost_limit_micros: money("monthly_cost_limit_micros"),
    input_cost_micros_per_million: money("input_cost_micros_per_million"),
    output_cost_micros_per_million: money("output_cost_micros_per_million"),
  };
}

/**
 * The draft as the PUT body, before the schema's verdict: an empty number takes its default, an
 * empty monthly limit is null; and the amounts that could not be read as currency units, by field.
 */
function bodyOf(d: Draft): { body: Record<string, unknown>; unreadable: FieldErrors } {
  const num = (s: string) => (s.trim() === "" ? undefined : Number(s.trim()));
  const unreadable: FieldErrors = {};
  const money = (f: MoneyField) => {
    if (d[f].trim() === "") return undefined;
    const parsed = parseUnits(d[f], LIMITS[f].max!);
    if (parsed.ok) return parsed.micros;
    unreadable[f] = parsed.message;
    return undefined;
  };
  const body = {
    credential_id: d.credential_id,
    enabled: d.enabled,
    mode: d.mode,
    model: d.model.trim(),
    system_instruction: d.system_instruction,
    max_context_bytes: num(d.max_context_bytes),
    max_output_tokens: num(d.max_output_tokens),
    monthly_cost_limit_micros: money("monthly_cost_limit_micros") ?? null,
    input_cost_micros_per_million: money("input_cost_micros_per_million"),
    output_cost_micros_per_million: money("output_cost_micros_per_million"),
  };
  return { body, unreadable };
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
  const policies = useQuery({ queryKey: POLICIES, queryFn: () => expectOk(api.ai.listPolicies()) });
  if (policies.error) return <ProblemNote error={policies.error} />;
  if (!policies.data) return <p role="status">Loading…</p>;
  return <PolicyForm slug={slug} policy={policies.data.data.find((p) => p.connection === slug) ?? null} canWrite={canWrite} />;
}

function PolicyForm({ slug, policy, canWrite }: { slug: string; policy: AiPolicy | null; canWrite: boolean }) {
  const credentials = useAiCredentials();
  const [draft, setDraft] = useState<Draft>(() => draftOf(policy));
  const [invalid, setInvalid] = useState<FieldErrors>({});
  const save = useMutation({
    mutationKey: AI_CHANGE,
    mutationFn: (body: AiPolicyBody) => expectOk(api.ai.setPolicy({ params: { connection: slug }, body })),
    onSuccess: (saved) => {
      queryClient.setQueryData<AiPolicyList>(POLICIES, (list) => list && { data: [...list.data.filter((p) => p.connection !== slug), saved] });
      setDraft(draftOf(saved));
    },
    onError: onPlanRefused,
  });
  const errors: FieldErrors = { ...errorsOfProblem(save.error), ...invalid };
  const set = <K extends Field>(k: K, v: Draft[K]) => setDraft({ ...draft, [k]: v });
  const send = (d: Draft) => {
    const { body, unreadable } = bodyOf(d);
    const parsed = AiPolicyBody.safeParse(body);
    const issues = { ...(parsed.success ? {} : errorsOfIssues(parsed.error.issues)), ...unreadable };
    // "Invalid uuid" says little about an empty choice.
    if (d.credential_id === "") issues.credential_id = "choose one (add one on the Credentials section first if there is none)";
    setInvalid(issues);
    save.reset();
    if (parsed.success && Object.keys(issues).length === 0) save.mutate(parsed.data);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    send(draft);
  };
  // The saved policy, turned off: edits not yet saved are not sent along.
  const turnOff = () => policy && send({ ...draftOf(policy), enabled: false });
  const num = (f: CountField, label: string, help: ReactNode) => (
    <Row field={f} label={label} help={help} error={errors[f]}>
      {(a11y) => (
        <input {...a11y} type="number" inputMode="numeric" step={1} min={LIMITS[f].min} max={LIMITS[f].max} value={draft[f]} onChange={(e) => set(f, e.target.value)} />
      )}
    </Row>
  );
  // Text, not type=number: a browser's number field rounds past 15 significant digits.
  const money = (f: MoneyField, label: string, help: ReactNode) => (
    <Row field={f} label={label} help={help} error={errors[f]}>
      {(a11y) => <input {...a11y} type="text" inputMode="decimal" autoComplete="off" value={draft[f]} onChange={(e) => set(f, e.target.value)} />}
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
            Amounts in units of your currency, such as 2.50, as the vendor prices a million tokens; up to six decimals. A run costs input tokens ×
            input price / 1,000,000 plus the same for output, rounded up to the millionth of a unit. (The API stores millionths, micros: 2.50 is
            2,500,000.)
          </p>
          {money("input_cost_micros_per_million", "Input price per million tokens", limitsText(LIMITS.input_cost_micros_per_million, "", formatUnits))}
          {money("output_cost_micros_per_million", "Output price per million tokens", limitsText(LIMITS.output_cost_micros_per_million, "", formatUnits))}
          {money(
            "monthly_cost_limit_micros",
            "Monthly cost limit",
            `${limitsText(LIMITS.monthly_cost_limit_micros, "", formatUnits)}. Empty: no limit. 0: refuse every run. Otherwise a run that could pass it this calendar month is refused before the vendor is called.`,
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
