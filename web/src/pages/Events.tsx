// The live event monitor: the workspace's events as the server records them (the payloads
// webhooks deliver), pushed over server-sent events with the session cookie; newest first.
import { useEffect, useState } from "react";
import { queryClient } from "../api";
import { SESSION_KEY } from "../session";
import { ConnectionName, formatDate, Page } from "../ui";

/** server/events/stream.ts; same origin, so the HttpOnly cookie goes along. */
const STREAM_PATH = "/v1/events/stream";
/** What the page keeps: a monitor, not a log (the messages and delivery pages are the log). */
const KEEP = 200;

interface StreamedEvent {
  id: string;
  type: string;
  created_at: string;
  connection: string | null;
  data: Record<string, unknown>;
}

type State = "connecting" | "listening" | "reconnecting" | "closed";

const STATE_TEXT: Record<State, string> = {
  connecting: "Connecting…",
  listening: "Listening for events as they happen.",
  reconnecting: "Connection lost; reconnecting…",
  closed: "Disconnected. Reload the page to listen again.",
};

export function Events() {
  const [events, setEvents] = useState<StreamedEvent[]>([]);
  const [state, setState] = useState<State>("connecting");
  const [paused, setPaused] = useState(false);

  useEffect(() => {
    if (paused) return;
    const source = new EventSource(STREAM_PATH);
    source.onopen = () => setState("listening");
    source.onmessage = (m: MessageEvent<string>) => {
      const event = JSON.parse(m.data) as StreamedEvent;
      setEvents((list) => [event, ...list.filter((e) => e.id !== event.id)].slice(0, KEEP));
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        setState("closed");
        // Refused (most likely the session ended): the session check sends the page to sign-in.
        void queryClient.invalidateQueries({ queryKey: SESSION_KEY });
      } else {
        setState("reconnecting");
      }
    };
    return () => source.close();
  }, [paused]);

  return (
    <Page title="Events">
      <p role="status">{paused ? "Paused." : STATE_TEXT[state]}</p>
      <div className="actions">
        <button type="button" onClick={() => { setState("connecting"); setPaused((p) => !p); }}>
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
