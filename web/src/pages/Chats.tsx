// Chats (docs/conversations.md): a connection's chats with their unread counts, and one chat's
// messages in both directions, oldest first, kept live by the event stream: replies shown with the
// message they quote, reactions, edited and deleted marks, media opened through the media route,
// poll tallies, a contact's "typing…". A member whose role may grant messages:write answers in the
// chat (send, reply quoting a message, react) and marks it read; anyone else reads only.
import { useCallback, useRef, useState, type FormEvent } from "react";
import { Link, useParams } from "react-router";
import { useInfiniteQuery, useMutation, useQuery } from "@tanstack/react-query";
import { PRESENCE_CLEARS_AFTER_S, ReplyBody, SendMessageBody, sessionMayUse, type Message, type Recipient, type Role } from "@svc/sdk/contract";
import { newIdempotencyKey } from "@svc/sdk";
import { api, expectOk, queryClient } from "../api";
import { Badge, StateBadge } from "../badges";
import { PageButtons, useCursorPages } from "../cursor-pages";
import { useEventStream, type StreamedEvent } from "../event-stream";
import { formatCount } from "../format";
import { ConnectionName, ConnectionPicker, formatDate, InvalidNote, issuesText, Page, ProblemNote } from "../ui";

const CHATS_PAGE_SIZE = 25;
/** Messages read per page of a chat; older ones on request. */
const MESSAGES_PAGE_SIZE = 50;
/** The reactions offered; the API takes any one emoji. */
const QUICK_REACTIONS = ["👍", "❤️", "😂", "😮", "🙏"] as const;
const GROUP = "group:";

const chatsKey = (connection: string) => ["chats", connection] as const;
const chatKey = (connection: string, chat: string) => ["chat", connection, chat] as const;

/** `group:<id>` → `group <id>`; a contact as the API names it. */
export function chatText(chat: string): string {
  return chat.startsWith(GROUP) ? `group ${chat.slice(GROUP.length)}` : chat;
}

/** The recipient a send into the chat names (a group by its id). */
function chatRecipient(chat: string): Recipient {
  return chat.startsWith(GROUP) ? { group: chat.slice(GROUP.length) } : chat;
}

export const chatPath = (connection: string, chat: string) => `/chats/${connection}/${encodeURIComponent(chat)}`;

/** A short text naming a message in a list or a label. */
function snippet(m: Pick<Message, "body" | "media" | "poll" | "location" | "id">): string {
  if (m.body) return m.body.length > 40 ? `${m.body.slice(0, 40)}…` : m.body;
  if (m.poll) return `poll: ${m.poll.question}`;
  if (m.media) return `[${m.media.kind ?? "media"}]`;
  if (m.location) return "[location]";
  return m.id;
}

export function Chats() {
  const { connection = "" } = useParams();
  return (
    <Page title="Chats">
      <ConnectionPicker base="chats" current={connection} />
      {connection && <ChatList key={connection} connection={connection} />}
    </Page>
  );
}

function ChatList({ connection }: { connection: string }) {
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const list = useQuery({
    queryKey: [...chatsKey(connection), cursor],
    queryFn: () => expectOk(api.conversations.listChats({ params: { connection }, query: { limit: CHATS_PAGE_SIZE, ...(cursor && { cursor }) } })),
  });
  // A message in or out, a read: the list and its counts follow.
  useEventStream(
    useCallback((e: StreamedEvent) => {
      if (e.connection === connection) void queryClient.invalidateQueries({ queryKey: chatsKey(connection) });
    }, [connection]),
  );
  return (
    <>
      <h2>Chats of <ConnectionName slug={connection} /></h2>
      <ProblemNote error={list.error} />
      {list.data && list.data.data.length === 0 && <p>No chats yet: a message sent or received starts one.</p>}
      <ul className="rows" aria-label="Chats">
        {list.data?.data.map((c) => (
          <li key={c.chat}>
            <span className="row-main">
              <span className="row-title">
                <Link to={chatPath(connection, c.chat)}>{chatText(c.chat)}</Link>
                {c.unread_count > 0 && <Badge tone="info" label={`${formatCount(c.unread_count)} unread`}>{`${formatCount(c.unread_count)} unread`}</Badge>}
              </span>
              <span className="meta">
                last {c.last_message.direction} · <StateBadge kind="message" value={c.last_message.status} /> · {formatDate(c.last_message.at)}
              </span>
            </span>
          </li>
        ))}
      </ul>
      <PageButtons pages={pages} nextCursor={list.data?.next_cursor} />
    </>
  );
}

export function ChatView({ role }: { role: Role }) {
  const { connection = "", chat = "" } = useParams();
  const canWrite = sessionMayUse(role, "messages:write");
  const [replyTo, setReplyTo] = useState<Message | null>(null);
  const [typing, setTyping] = useState<string | null>(null);
  const typingTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const messages = useInfiniteQuery({
    queryKey: chatKey(connection, chat),
    queryFn: ({ pageParam }) =>
      expectOk(api.messages.list({ query: { connection, chat, limit: MESSAGES_PAGE_SIZE, ...(pageParam !== undefined && { cursor: pageParam }) } })),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  // The API answers newest first; a chat reads oldest first.
  const shown = (messages.data?.pages.flatMap((p) => p.data) ?? []).slice().reverse();
  const byId = new Map(shown.map((m) => [m.id, m]));
  const newestInbound = [...shown].reverse().find((m) => m.direction === "inbound");

  const stream = useEventStream(
    useCallback(
      (e: StreamedEvent) => {
        if (e.connection !== connection) return;
        if (e.type === "chat.presence") {
          if (e.data.chat !== chat) return;
          clearTimeout(typingTimer.current);
          const state = e.data.state;
          if (state === "typing" || state === "recording") {
            setTyping(`${String(e.data.from)} is ${state}…`);
            // The network clears it after this long when no "paused" comes.
            typingTimer.current = setTimeout(() => setTyping(null), PRESENCE_CLEARS_AFTER_S * 1000);
          } else setTyping(null);
          return;
        }
        void queryClient.invalidateQueries({ queryKey: chatKey(connection, chat) });
      },
      [connection, chat],
    ),
  );

  const markRead = useMutation({
    mutationFn: (id: string) => expectOk(api.conversations.markRead({ params: { id } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: chatsKey(connection) }),
  });

  return (
    <Page title={`Chat with ${chatText(chat)}`}>
      <p>
        <Link to={`/chats/${connection}`}>All chats of {connection}</Link>
      </p>
      <ProblemNote error={messages.error} />
      {messages.hasNextPage && (
        <button type="button" className="secondary" onClick={() => void messages.fetchNextPage()} disabled={messages.isFetchingNextPage}>
          Show earlier messages
        </button>
      )}
      {messages.data && shown.length === 0 && <p>No messages in this chat.</p>}
      <ol className="chat" aria-label="Messages">
        {shown.map((m) => (
          <ChatMessage key={m.id} message={m} quoted={m.reply_to ? (byId.get(m.reply_to) ?? m.reply_to) : null} canWrite={canWrite} onReply={() => setReplyTo(m)} />
        ))}
      </ol>
      <p className="help">{stream === "listening" ? "New messages appear here as they arrive." : "Connecting to live updates…"}</p>
      <p role="status" className="typing">
        {typing ?? ""}
      </p>
      {canWrite ? (
        <>
          {newestInbound && (
            <div className="actions">
              <button type="button" className="secondary" onClick={() => markRead.mutate(newestInbound.id)} disabled={markRead.isPending}>
                Mark as read
              </button>
            </div>
          )}
          {markRead.data && <p role="status">{markRead.data.marked === 1 ? "1 message marked read." : `${formatCount(markRead.data.marked)} messages marked read.`}</p>}
          <ProblemNote error={markRead.error} />
          <ChatComposer connection={connection} chat={chat} replyTo={replyTo} onDone={() => setReplyTo(null)} />
        </>
      ) : (
        <p className="notice">Your role ({role}) reads chats; answering in them needs the developer role or higher.</p>
      )}
    </Page>
  );
}

function ChatMessage({ message: m, quoted, canWrite, onReply }: { message: Message; quoted: Message | string | null; canWrite: boolean; onReply: () => void }) {
  const ours = m.direction === "outbound";
  // The reaction picker closes once the reaction is taken.
  const [picking, setPicking] = useState(false);
  const react = useMutation({
    mutationFn: (emoji: string) => expectOk(api.conversations.react({ params: { id: m.id }, body: { emoji } })),
    onSuccess: () => setPicking(false),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: ["chat", m.connection] }),
  });
  const reactions = Object.entries(m.reactions);
  // Reactions and replies need the network's id of the message (409 before it has one).
  const actionable = canWrite && m.provider_message_id !== null && m.revoked_at === null;
  const what = `“${snippet(m)}”`;
  return (
    <li className={ours ? "bubble ours" : "bubble theirs"} aria-label={`${ours ? "Sent" : `From ${m.from ?? "?"}`}: ${snippet(m)}`}>
      <span className="meta">
        {ours ? "You" : (m.from ?? "?")} · <time dateTime={m.created_at}>{formatDate(m.created_at)}</time>
        {ours && (
          <>
            {" "}
            <StateBadge kind="message" value={m.status} />
          </>
        )}
        {m.edited_at && (
          <>
            {" "}
            <Badge tone="quiet">edited</Badge>
          </>
        )}
        {m.revoked_at && (
          <>
            {" "}
            <Badge tone="warn">deleted for everyone</Badge>
          </>
        )}
      </span>
      {quoted && <Quoted quoted={quoted} />}
      {m.body && <p className="body">{m.body}</p>}
      {m.media && (
        <p>
          {/* The media route fetches it from the network on demand, with the session cookie; never stored. */}
          <a href={`/v1/messages/${m.id}/media`} download={m.media.filename ?? true}>
            Open the {m.media.kind ?? "media"}
            {m.media.filename ? ` ${m.media.filename}` : ""}
          </a>
        </p>
      )}
      {m.location && (
        <p>
          Location {m.location.title ? `${m.location.title} ` : ""}({m.location.latitude}, {m.location.longitude})
        </p>
      )}
      {m.poll && (
        <figure className="poll">
          <figcaption>Poll: {m.poll.question}</figcaption>
          <ul aria-label={`Votes on ${m.poll.question}`}>
            {m.poll.options.map((o) => (
              <li key={o.name}>
                {o.name}: {o.votes === 1 ? "1 vote" : `${formatCount(o.votes)} votes`}
              </li>
            ))}
          </ul>
        </figure>
      )}
      {reactions.length > 0 && (
        <ul className="reactions" aria-label="Reactions">
          {reactions.map(([emoji, count]) => (
            <li key={emoji}>
              {emoji} {formatCount(count)}
            </li>
          ))}
        </ul>
      )}
      {actionable && (
        <span className="actions">
          <button type="button" className="secondary" onClick={onReply} aria-label={`Reply to ${what}`}>
            Reply
          </button>
          <details className="react" open={picking} onToggle={(e) => setPicking(e.currentTarget.open)}>
            <summary aria-label={`React to ${what}`}>React</summary>
            <span className="actions">
              {QUICK_REACTIONS.map((emoji) => (
                <button key={emoji} type="button" className="secondary" onClick={() => react.mutate(emoji)} disabled={react.isPending} aria-label={`React with ${emoji}`}>
                  {emoji}
                </button>
              ))}
              <button type="button" className="secondary" onClick={() => react.mutate("")} disabled={react.isPending}>
                Remove my reaction
              </button>
            </span>
          </details>
        </span>
      )}
      <ProblemNote error={react.error} />
    </li>
  );
}

/** The message a reply quotes: from the page when it is loaded, else read by its id. */
function Quoted({ quoted }: { quoted: Message | string }) {
  const id = typeof quoted === "string" ? quoted : quoted.id;
  const fetched = useQuery({ queryKey: ["message", id], queryFn: () => expectOk(api.messages.get({ params: { id } })), enabled: typeof quoted === "string" });
  const m = typeof quoted === "string" ? fetched.data : quoted;
  return (
    <blockquote className="quoted" aria-label="Quoted message">
      {m ? `${m.direction === "outbound" ? "You" : (m.from ?? "?")}: ${snippet(m)}` : fetched.error ? "A message no longer shown" : "…"}
    </blockquote>
  );
}

/**
 * Writing into the chat: a send to the chat, or a reply quoting the message chosen. One
 * Idempotency-Key per composition (a double click or a retry after a lost answer sends once).
 */
function ChatComposer({ connection, chat, replyTo, onDone }: { connection: string; chat: string; replyTo: Message | null; onDone: () => void }) {
  const [text, setText] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const [idempotencyKey, setIdempotencyKey] = useState(newIdempotencyKey);
  const sending = useRef(false);
  const send = useMutation({
    mutationFn: (request: { reply: string; body: ReplyBody } | { reply: null; body: SendMessageBody }) =>
      request.reply !== null
        ? expectOk(api.conversations.reply({ params: { id: request.reply }, body: request.body, headers: { "idempotency-key": idempotencyKey } }))
        : expectOk(api.messages.send({ body: request.body, headers: { "idempotency-key": idempotencyKey } })),
    onSettled: () => {
      sending.current = false;
    },
    onSuccess: () => {
      setIdempotencyKey(newIdempotencyKey());
      setText("");
      onDone();
      void queryClient.invalidateQueries({ queryKey: chatKey(connection, chat) });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (sending.current) return;
    if (!text.trim()) return setInvalid("Write the text of the message.");
    // A reply is in the quoted message's chat already; a send names the chat as its recipient.
    const parsed = replyTo ? ReplyBody.safeParse({ body: text }) : SendMessageBody.safeParse({ connection, to: chatRecipient(chat), body: text });
    setInvalid(parsed.success ? null : issuesText(parsed.error.issues));
    if (!parsed.success) return;
    sending.current = true;
    if (replyTo) send.mutate({ reply: replyTo.id, body: parsed.data as ReplyBody });
    else send.mutate({ reply: null, body: parsed.data as SendMessageBody });
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="chat-compose-title" className="compose">
      <h2 id="chat-compose-title">{replyTo ? "Reply" : "Write in this chat"}</h2>
      {replyTo && (
        <div className="notice">
          Replying to <q>{snippet(replyTo)}</q>{" "}
          <button type="button" className="link" onClick={onDone}>
            Cancel reply
          </button>
        </div>
      )}
      <label htmlFor="chat-text">Message</label>
      <textarea id="chat-text" required rows={3} maxLength={4096} value={text} onChange={(e) => setText(e.target.value)} />
      <InvalidNote message={invalid} />
      <ProblemNote error={send.error} />
      <button type="submit" disabled={send.isPending}>
        {send.isPending ? "Sending…" : replyTo ? "Send reply" : "Send"}
      </button>
    </form>
  );
}
