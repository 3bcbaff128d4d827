// Reading a `text/event-stream` response (the dashboard's live event stream) over real HTTP, for
// the tests and the benches: the body is split into blocks on blank lines, and each block's
// `data:` line is parsed as JSON and handed on; blocks without one (`retry:`, `: keep-alive`) are
// skipped.

/** An open stream: the response as it came, and a way to stop reading it. */
export interface EventStream {
  /** The response (status and headers); its body is being read. */
  readonly res: Response;
  /** Whether the reading stopped: the server ended the stream, or close() did. */
  readonly ended: boolean;
  /** Aborts the request and waits until the reading has stopped. */
  close(): Promise<void>;
}

/** Opens `url` with `headers` and calls `onEvent` with each event's `data:` payload, parsed as JSON, as it arrives. */
export async function openEventStream<T>(url: string, headers: Record<string, string>, onEvent: (event: T) => void): Promise<EventStream> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  let ended = false;
  const reading = (async () => {
    await readEvents(res, onEvent);
    ended = true;
  })();
  return {
    res,
    get ended() {
      return ended;
    },
    async close() {
      controller.abort();
      await reading;
    },
  };
}

/** Reads `res`'s body to its end (or its abort), calling `onEvent` with each event's parsed `data:`. */
async function readEvents<T>(res: Response, onEvent: (event: T) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for await (const chunk of res.body!) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = /^data: (.*)$/m.exec(block);
        if (data) onEvent(JSON.parse(data[1]!) as T);
      }
    }
  } catch {
    // aborted by close()
  }
}
