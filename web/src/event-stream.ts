// The workspace's events as the server records them (the payloads webhooks deliver), pushed over
// server-sent events with the session cookie: the live event monitor and the chat view listen.
import { useEffect, useRef, useState } from "react";
import { queryClient } from "./api";
import { SESSION_KEY } from "./session";

/** server/events/stream.ts; same origin, so the HttpOnly cookie goes along. */
const STREAM_PATH = "/v1/events/stream";

export interface StreamedEvent {
  id: string;
  type: string;
  created_at: string;
  connection: string | null;
  data: Record<string, unknown>;
}

export type StreamState = "connecting" | "listening" | "reconnecting" | "closed";

/** Calls `onEvent` with each event while `enabled`; answers how the stream stands. */
export function useEventStream(onEvent: (event: StreamedEvent) => void, enabled = true): StreamState {
  const [state, setState] = useState<StreamState>("connecting");
  // The latest handler, without reopening the stream when the caller renders a new one.
  const handler = useRef(onEvent);
  useEffect(() => {
    handler.current = onEvent;
  }, [onEvent]);

  useEffect(() => {
    if (!enabled) return;
    const source = new EventSource(STREAM_PATH);
    source.onopen = () => setState("listening");
    source.onmessage = (m: MessageEvent<string>) => handler.current(JSON.parse(m.data) as StreamedEvent);
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        setState("closed");
        // Refused (most likely the session ended): the session check sends the page to sign-in.
        void queryClient.invalidateQueries({ queryKey: SESSION_KEY });
      } else {
        setState("reconnecting");
      }
    };
    return () => {
      source.close();
      setState("connecting");
    };
  }, [enabled]);
  return state;
}
