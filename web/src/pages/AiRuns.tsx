// AI runs, newest first: what each run cost and how it ended (never a prompt or a completion: the
// API has none to give), filtered by connection, in cursor pages. A problem the API answers instead
// is shown with its detail and request_id.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { AiRun } from "@svc/sdk";
import { api, expectOk } from "../api";
import { useConnections } from "../connections";
import { PageButtons, useCursorPages } from "../cursor-pages";
import { StateBadge } from "../badges";
import { formatCount, formatUnits } from "../format";
import { ConnectionName, ConnectionOptions, formatDate, ProblemNote } from "../ui";

const PAGE_SIZE = 25;

export function AiRuns() {
  const [connection, setConnection] = useState("");
  const pages = useCursorPages();
  const connections = useConnections();
  const cursor = pages.cursor;
  const runs = useQuery({
    queryKey: ["ai-runs", connection, cursor],
    queryFn: () => expectOk(api.ai.listRuns({ query: { limit: PAGE_SIZE, ...(connection && { connection }), ...(cursor && { cursor }) } })),
  });
  return (
    <>
      <h2>Runs</h2>
      <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="runs-connection">Connection</label>
        <select
          id="runs-connection"
          value={connection}
          onChange={(e) => {
            setConnection(e.target.value);
            pages.reset();
          }}
        >
          <ConnectionOptions connections={connections.data?.data} all />
        </select>
      </form>
      <ProblemNote error={runs.error ?? connections.error} />
      {runs.isPending && <p role="status">Loading…</p>}
      {runs.data && runs.data.data.length === 0 && <p>No runs{connection && ` on ${connection}`} yet.</p>}
      {runs.data && runs.data.data.length > 0 && <RunsTable runs={runs.data.data} />}
      {runs.data && <PageButtons pages={pages} nextCursor={runs.data.next_cursor} />}
    </>
  );
}

function RunsTable({ runs }: { runs: AiRun[] }) {
  return (
    // Wider than a phone: the table scrolls sideways inside its own focusable region.
    <div className="table-scroll" role="region" aria-label="AI runs" tabIndex={0}>
      <table>
        <thead>
          <tr>
            <th scope="col">Created</th>
            <th scope="col">Connection</th>
            <th scope="col">Mode</th>
            <th scope="col">Model</th>
            <th scope="col">Outcome</th>
            <th scope="col">Error</th>
            <th scope="col">Tokens in / out</th>
            <th scope="col">Cost</th>
            <th scope="col">Latency</th>
            <th scope="col">Prompt SHA-256</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id}>
              <td>{formatDate(r.created_at)}</td>
              <td>
                <ConnectionName slug={r.connection} />
              </td>
              <td>{r.mode}</td>
              <td>{r.model}</td>
              <td>
                <StateBadge kind="run" value={r.outcome} />
              </td>
              <td>{r.error ?? "—"}</td>
              <td>
                {formatCount(r.input_tokens)} / {formatCount(r.output_tokens)}
              </td>
              <td title={`${formatCount(r.cost_micros)} micros`}>{formatUnits(r.cost_micros)}</td>
              <td>{r.latency_ms === null ? "—" : `${formatCount(r.latency_ms)} ms`}</td>
              <td>{r.prompt_sha256 ? <code title={r.prompt_sha256}>{r.prompt_sha256.slice(0, 12)}…</code> : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
