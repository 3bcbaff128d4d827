// Messages: sending (Compose), filters, cursor pages (forward with next_cursor, back through the
// cursors seen), one message's timeline, and the CSV export of what the filters select.
import { useState } from "react";
import { Link, useParams } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { MESSAGE_STATUSES, type Message } from "@svc/sdk/contract";
import { api, expectOk } from "../api";
import { useConnections } from "../connections";
import { StateBadge } from "../badges";
import { CopyButton } from "../copy";
import { ConnectionName, ConnectionOptions, formatDate, Page, ProblemNote } from "../ui";
import { Compose } from "./Compose";
import { PageButtons, useCursorPages } from "../cursor-pages";

type Filters = { connection: string; status: string; direction: string };
const PAGE_SIZE = 25;

function recipient(m: Message): string {
  if (typeof m.to === "string") return m.to;
  return "phone" in m.to ? m.to.phone : `group ${m.to.group}`;
}

/** The filters as query parameters, leaving out the empty ones. */
function filterQuery(f: Filters) {
  return {
    ...(f.connection && { connection: f.connection }),
    ...(f.status && { status: f.status as Message["status"] }),
    ...(f.direction && { direction: f.direction as Message["direction"] }),
  };
}

export function Messages() {
  const [filters, setFilters] = useState<Filters>({ connection: "", status: "", direction: "" });
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const connections = useConnections();
  const list = useQuery({
    queryKey: ["messages", filters, cursor],
    queryFn: () => expectOk(api.messages.list({ query: { limit: PAGE_SIZE, ...filterQuery(filters), ...(cursor && { cursor }) } })),
  });
  const setFilter = (k: keyof Filters, v: string) => {
    setFilters({ ...filters, [k]: v });
    pages.reset();
  };
  const exportHref = `/v1/messages/export?${new URLSearchParams(filterQuery(filters)).toString()}`;

  return (
    <Page title="Messages">
      <Compose />
      <h2>Sent and received</h2>
      <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="f-connection">Connection</label>
        <select id="f-connection" value={filters.connection} onChange={(e) => setFilter("connection", e.target.value)}>
          <ConnectionOptions connections={connections.data?.data} all />
        </select>
        <label htmlFor="f-status">Status</label>
        <select id="f-status" value={filters.status} onChange={(e) => setFilter("status", e.target.value)}>
          <option value="">All</option>
          {MESSAGE_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label htmlFor="f-direction">Direction</label>
        <select id="f-direction" value={filters.direction} onChange={(e) => setFilter("direction", e.target.value)}>
          <option value="">Both</option>
          <option value="outbound">outbound</option>
          <option value="inbound">inbound</option>
        </select>
      </form>
      <p>
        <a href={exportHref} download>
          Export the last 30 days as CSV
        </a>
      </p>
      <ProblemNote error={list.error ?? connections.error} />
      {list.data && list.data.data.length === 0 && <p>No messages match.</p>}
      <ul className="rows">
        {list.data?.data.map((m) => (
          <li key={m.id}>
            <span className="row-main">
              <span className="row-title">
                <Link to={`/messages/${m.id}`}>{m.body ? m.body.slice(0, 60) : m.media ? `[${m.media.kind ?? "media"}]` : m.id}</Link>
                <StateBadge kind="message" value={m.status} />
              </span>
              <span className="meta">
                {m.direction} {m.direction === "outbound" ? `to ${recipient(m)}` : `from ${m.from ?? "?"}`} · <ConnectionName slug={m.connection} /> · {formatDate(m.created_at)}
              </span>
            </span>
          </li>
        ))}
      </ul>
      <PageButtons pages={pages} nextCursor={list.data?.next_cursor} />
    </Page>
  );
}

export function MessageDetail() {
  const { id = "" } = useParams();
  const message = useQuery({ queryKey: ["message", id], queryFn: () => expectOk(api.messages.get({ params: { id } })), refetchInterval: 5_000 });
  const m = message.data;
  return (
    <Page title="Message">
      <p>
        <Link to="/messages">All messages</Link>
      </p>
      <ProblemNote error={message.error} />
      {m && (
        <>
          <dl className="facts">
            <dt>ID</dt>
            <dd>
              <code>{m.id}</code> <CopyButton value={m.id} what="the message ID" />
            </dd>
            <dt>Connection</dt>
            <dd>
              <ConnectionName slug={m.connection} />
            </dd>
            <dt>Direction</dt>
            <dd>{m.direction}</dd>
            <dt>{m.direction === "outbound" ? "To" : "From"}</dt>
            <dd>{m.direction === "outbound" ? recipient(m) : m.from}</dd>
            <dt>Status</dt>
            <dd>
              <StateBadge kind="message" value={m.status} />
            </dd>
            {m.body !== null && (
              <>
                <dt>Body</dt>
                <dd>{m.body}</dd>
              </>
            )}
            {m.error && (
              <>
                <dt>Error</dt>
                <dd>
                  {m.error.code}: {m.error.message}
                </dd>
              </>
            )}
          </dl>
          <h2>Timeline</h2>
          <ol className="timeline" aria-label="Timeline">
            {m.timeline.map((t, i) => (
              <li key={i}>
                <StateBadge kind="message" value={t.status} /> <time dateTime={t.at}>{formatDate(t.at)}</time>
                {t.detail && ` · ${t.detail}`}
              </li>
            ))}
          </ol>
        </>
      )}
    </Page>
  );
}
