// Small shared pieces: the problem box every error goes through, a form's own refusal, a group of
// checkboxes, the connections offered by a select, named by slug or picked for a page (their query: connections.ts),
// and the page frame.
import type { ReactNode } from "react";
import { useNavigate } from "react-router";
import type { Connection } from "@svc/sdk";
import { SvcApiError } from "./api";
import { useConnections } from "./connections";

/** Shows what went wrong as the API said it: the problem's detail and its request_id. */
export function ProblemNote({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof SvcApiError) {
    // A validation problem's detail is its errors joined: shown once, as the list.
    const listed = error.errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; ");
    const detail = error.problem?.detail && error.problem.detail !== listed ? error.problem.detail : null;
    return (
      <div role="alert" className="problem">
        <strong>{error.problem?.title ?? `Error ${error.status}`}</strong>
        {detail && <p>{detail}</p>}
        {error.errors.length > 0 && (
          <ul>
            {error.errors.map((e) => (
              <li key={e.path}>
                {e.path}: {e.message}
              </li>
            ))}
          </ul>
        )}
        {error.requestId && <p className="request-id">Request ID: <code>{error.requestId}</code></p>}
      </div>
    );
  }
  return (
    <div role="alert" className="problem">
      <strong>Something went wrong</strong>
      <p>{error instanceof Error ? error.message : String(error)}</p>
    </div>
  );
}

/** What a form refused before sending anything (the contract's schema said no). */
export function InvalidNote({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <p role="alert" className="problem">
      {message}
    </p>
  );
}

/** A schema's complaints on one line: `path: message; …` (`root` names the value itself). */
export function issuesText(issues: readonly { path: readonly PropertyKey[]; message: string }[], root = "value"): string {
  return issues.map((i) => `${i.path.map(String).join(".") || root}: ${i.message}`).join("; ");
}

/** Checkboxes choosing some of `options`, in the order they are offered. */
export function CheckboxGroup<T extends string>({ legend, options, selected, onChange }: { legend: string; options: readonly T[]; selected: readonly T[]; onChange: (next: T[]) => void }) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map((o) => (
        <label key={o} className="check">
          <input type="checkbox" checked={selected.includes(o)} onChange={(e) => onChange(e.target.checked ? [...selected, o] : selected.filter((x) => x !== o))} />
          {o}
        </label>
      ))}
    </fieldset>
  );
}

/** The workspace's connections as a `<select>`'s options, each valued by its slug and labelled by its name and slug; `all` puts an "All" option (value "") first. */
export function ConnectionOptions({ connections, all = false }: { connections: readonly Connection[] | undefined; all?: boolean }) {
  return (
    <>
      {all && <option value="">All</option>}
      {connections?.map((c) => (
        <option key={c.id} value={c.slug}>
          {connectionText(c)}
        </option>
      ))}
    </>
  );
}

/** `Front desk (front-desk)`, or the slug alone when the connection has no name. */
export function connectionText(c: Pick<Connection, "slug" | "name">): string {
  return c.name ? `${c.name} (${c.slug})` : c.slug;
}

/** A connection named by its slug elsewhere (a message, a run, a schedule): its name beside the slug, from the cached list. */
export function ConnectionName({ slug }: { slug: string }) {
  const name = useConnections().data?.data.find((c) => c.slug === slug)?.name;
  return name ? (
    <span>
      {name} <code className="slug">{slug}</code>
    </span>
  ) : (
    <code className="slug">{slug}</code>
  );
}

/** The connection a page of one connection shows (`/{base}/{slug}`), or a picker that puts one in the path. */
export function ConnectionPicker({ base, current }: { base: string; current: string }) {
  const navigate = useNavigate();
  const connections = useConnections();
  return (
    <form className="filters" aria-label="Choose a connection" onSubmit={(e) => e.preventDefault()}>
      <label htmlFor={`${base}-connection`}>Connection</label>
      <select id={`${base}-connection`} value={current} onChange={(e) => void navigate(e.target.value ? `/${base}/${e.target.value}` : `/${base}`)}>
        <option value="">Choose one</option>
        <ConnectionOptions connections={connections.data?.data} />
      </select>
      <ProblemNote error={connections.error} />
    </form>
  );
}

export function Page({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">{title}</h1>
      {children}
    </section>
  );
}

export function formatDate(iso: string): string {
  return new Date(iso).toLocaleString();
}
