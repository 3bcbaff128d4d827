// Small shared pieces: the problem box every error goes through, and the page frame.
import type { ReactNode } from "react";
import { SvcApiError } from "./api";

/** Shows what went wrong as the API said it: the problem's detail and its request_id. */
export function ProblemNote({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof SvcApiError) {
    return (
      <div role="alert" className="problem">
        <strong>{error.problem?.title ?? `Error ${error.status}`}</strong>
        {error.problem?.detail && <p>{error.problem.detail}</p>}
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
