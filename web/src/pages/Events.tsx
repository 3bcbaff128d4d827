// The live event monitor: the workspace's events as the server records them (the payloads
// webhooks deliver), pushed over server-sent events with the session cookie; newest first.
import { useCallback, useState } from "react";
import { useEventStream, type StreamState, type StreamedEvent } from "../event-stream";
import { ConnectionName, formatDate, Page } from "../ui";

/** What the page keeps: a monitor, not a log (the messages and delivery pages are the log). */
const KEEP = 200;

const STATE_TEXT: Record<StreamState, string> = {
  connecting: "Connecting…",
  listening: "Listening for events as they happen.",
  reconnecting: "Connection lost; reconnecting…",
  closed: "Disconnected. Reload the page to listen again.",
};

export function Events() {
  const [events, setEvents] = useState<StreamedEvent[]>([]);
  const [paused, setPaused] = useState(false);
  const onEvent = useCallback((event: StreamedEvent) => setEvents((list) => [event, ...list.filter((e) => e.id !== event.id)].slice(0, KEEP)), []);
  const state = useEventStream(onEvent, !paused);

  return (
    <Page title="Events">
      <p role="status">{paused ? "Paused." : STATE_TEXT[state]}</p>
      <div className="actions">
        <button type="button" onClick={() => setPaused((p) => !p)}>
          {paused ? "Resume" : "Pause"}
        </button>
        <button type="button" onClick={() => setEvents([])} disabled={events.length === 0}>
          Clear
        </button>
      </div>
      {events.length === 0 && <p>No events since this page opened. Send a message or pair a connection to see one.</p>}
      <ul className="rows" aria-label="Events" aria-live="polite">
        {events.map((e) => (
          <li key={e.id}>
            <details>
              <summary>
                <strong>{e.type}</strong>
                {e.connection && (
                  <>
                    {" · "}
                    <ConnectionName slug={e.connection} />
                  </>
                )}{" "}
                · {formatDate(e.created_at)}
              </summary>
              <pre className="payload">{JSON.stringify(e, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ul>
    </Page>
  );
}
