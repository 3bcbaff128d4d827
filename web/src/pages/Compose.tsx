// Composing a text message on the messages page: from a connected connection, to a phone number.
// One Idempotency-Key per composition, so a double click or a retry after a lost answer sends once;
// a new key only after the gateway accepted the send.
import { useRef, useState, type FormEvent } from "react";
import { Link, useNavigate } from "react-router";
import { useMutation } from "@tanstack/react-query";
import { SendMessageBody, sessionMayUse } from "@svc/sdk/contract";
import { newIdempotencyKey } from "@svc/sdk";
import { api, expectOk, queryClient } from "../api";
import { useConnections } from "../connections";
import { useSession } from "../session";
import { connectionText, InvalidNote, issuesText, ProblemNote } from "../ui";

export function Compose() {
  const role = useSession().data?.role;
  if (!role || !sessionMayUse(role, "messages:write")) return null;
  return <ComposeForm />;
}

function ComposeForm() {
  const navigate = useNavigate();
  const connections = useConnections();
  const connected = connections.data?.data.filter((c) => c.state === "connected") ?? [];
  const [chosen, setChosen] = useState("");
  const [to, setTo] = useState("");
  const [text, setText] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const [idempotencyKey, setIdempotencyKey] = useState(newIdempotencyKey);
  // Set at once on submit, before the button's disabled state renders: a double click sends once.
  const sending = useRef(false);
  // The first connected one until the member picks another (or the picked one is gone).
  const connection = connected.some((c) => c.slug === chosen) ? chosen : (connected[0]?.slug ?? "");

  const send = useMutation({
    mutationFn: (body: SendMessageBody) => expectOk(api.messages.send({ body, headers: { "idempotency-key": idempotencyKey } })),
    onSettled: () => {
      sending.current = false;
    },
    onSuccess: (message) => {
      setIdempotencyKey(newIdempotencyKey());
      setTo("");
      setText("");
      void queryClient.invalidateQueries({ queryKey: ["messages"] });
      void navigate(`/messages/${message.id}`);
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    // On its way already: a second request with the same key would only replay it.
    if (sending.current) return;
    const parsed = SendMessageBody.safeParse({ connection, to: to.trim(), body: text });
    const problems = parsed.success ? [] : [issuesText(parsed.error.issues)];
    if (!connection) problems.unshift("Choose a connected connection to send from.");
    if (!text.trim()) problems.push("Write the text of the message.");
    setInvalid(problems.length ? problems.join(" ") : null);
    if (parsed.success && !problems.length) {
      sending.current = true;
      send.mutate(parsed.data);
    }
  };

  return (
    <form onSubmit={submit} noValidate aria-labelledby="compose-title" className="compose">
      <h2 id="compose-title">Send a message</h2>
      {connections.data && connected.length === 0 ? (
        <p>
          No connection is connected yet: <Link to="/connections">pair one on the Connections page</Link> first.
        </p>
      ) : (
        <>
          <label htmlFor="compose-from">Send from</label>
          <select id="compose-from" value={connection} onChange={(e) => setChosen(e.target.value)}>
            {connected.map((c) => (
              <option key={c.id} value={c.slug}>
                {connectionText(c)}
                {c.phone ? ` · ${c.phone}` : ""}
              </option>
            ))}
          </select>
          <label htmlFor="compose-to">To (phone number)</label>
          <input id="compose-to" type="tel" autoComplete="off" required value={to} onChange={(e) => setTo(e.target.value)} aria-describedby="compose-to-help" />
          <small id="compose-to-help">International format, e.g. +15550002222.</small>
          <label htmlFor="compose-text">Text</label>
          <textarea id="compose-text" required rows={3} maxLength={4096} value={text} onChange={(e) => setText(e.target.value)} />
          <InvalidNote message={invalid} />
          <ProblemNote error={send.error ?? connections.error} />
          <button type="submit" disabled={send.isPending}>
            {send.isPending ? "Sending…" : "Send message"}
          </button>
        </>
      )}
    </form>
  );
}
