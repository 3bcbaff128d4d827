// Connections: create, pair (Pairing.tsx: a live QR, "connected" as soon as the phone scans),
// suspend/resume, delete after a confirmation; each one's chats and groups a link away.
import { useState, type FormEvent } from "react";
import { Link } from "react-router";
import { useMutation } from "@tanstack/react-query";
import { CreateConnectionBody, sessionMayUse, type Role } from "@svc/sdk/contract";
import type { Connection } from "@svc/sdk";
import { api, expectOk } from "../api";
import { StateBadge } from "../badges";
import { DangerAction } from "../confirm";
import { refreshConnections, useConnections } from "../connections";
import { formatDate, InvalidNote, Page, ProblemNote } from "../ui";
import { PairingPanel } from "./Pairing";

export function Connections({ role }: { role: Role }) {
  const canWrite = sessionMayUse(role, "connections:write");
  const [pairing, setPairing] = useState<string | null>(null);
  // While a QR is up, the state is polled so "connected" shows as soon as the phone scans.
  const list = useConnections({ refetchInterval: pairing ? 1_500 : false });
  const suspend = useMutation({ mutationFn: (slug: string) => expectOk(api.connections.suspend({ params: { connection: slug } })), onSuccess: refreshConnections });
  const resume = useMutation({ mutationFn: (slug: string) => expectOk(api.connections.resume({ params: { connection: slug } })), onSuccess: refreshConnections });
  const remove = useMutation({ mutationFn: (slug: string) => expectOk(api.connections.delete({ params: { connection: slug } })), onSuccess: refreshConnections });
  const pairingConnection = list.data?.data.find((c) => c.slug === pairing);

  return (
    <Page title="Connections">
      {canWrite && <CreateForm />}
      <ProblemNote error={list.error ?? suspend.error ?? resume.error ?? remove.error} />
      {pairingConnection && <PairingPanel connection={pairingConnection} onClose={() => setPairing(null)} />}
      <h2>Your connections</h2>
      {list.data && list.data.data.length === 0 && <p>No connections yet.</p>}
      <ul className="rows">
        {list.data?.data.map((c: Connection) => (
          <li key={c.id}>
            <span className="row-main">
              <span className="row-title">
                <strong>{c.name ?? c.slug}</strong>
                {c.name && <code className="slug">{c.slug}</code>}
                <StateBadge kind="connection" value={c.state} label={`State of ${c.slug}`} />
              </span>
              <span className="meta">
                {c.phone ? `${c.phone} · ` : ""}
                {c.transport} engine · created {formatDate(c.created_at)}
              </span>
            </span>
            <span className="actions">
              <Link to={`/chats/${c.slug}`} aria-label={`Chats of ${c.slug}`}>
                Chats
              </Link>
              <Link to={`/groups/${c.slug}`} aria-label={`Groups of ${c.slug}`}>
                Groups
              </Link>
            </span>
            {canWrite && (
              <span className="actions">
                {c.state !== "connected" && c.state !== "suspended" && (
                  <button type="button" onClick={() => setPairing(c.slug)} aria-label={`Pair ${c.slug}`}>
                    Pair
                  </button>
                )}
                {c.state === "suspended" ? (
                  <button type="button" className="secondary" onClick={() => resume.mutate(c.slug)} aria-label={`Resume ${c.slug}`}>
                    Resume
                  </button>
                ) : (
                  <button type="button" className="secondary" onClick={() => suspend.mutate(c.slug)} aria-label={`Suspend ${c.slug}`}>
                    Suspend
                  </button>
                )}
                <DangerAction
                  label="Delete"
                  name={`Delete ${c.slug}`}
                  title={`Delete ${c.name ?? c.slug}?`}
                  consequence={
                    <p>
                      The connection <code>{c.slug}</code> is deleted and its phone unlinked: it stops sending and receiving at once.
                    </p>
                  }
                  confirmLabel="Delete connection"
                  onConfirm={() => remove.mutate(c.slug)}
                />
              </span>
            )}
          </li>
        ))}
      </ul>
    </Page>
  );
}

function CreateForm() {
  const [slug, setSlug] = useState("");
  const [name, setName] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (body: CreateConnectionBody) => expectOk(api.connections.create({ body })),
    onSuccess: () => {
      setSlug("");
      setName("");
      void refreshConnections();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // A new try: the previous answer's problem no longer applies.
    create.reset();
    const parsed = CreateConnectionBody.safeParse({ slug: slug.trim(), ...(name.trim() && { name: name.trim() }) });
    setInvalid(parsed.success ? null : "The slug is 3 to 40 lower-case letters, digits and dashes, starting and ending with a letter or digit.");
    if (parsed.success) create.mutate(parsed.data);
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="create-title">
      <h2 id="create-title">New connection</h2>
      <label htmlFor="con-slug">Slug</label>
      <input id="con-slug" required value={slug} onChange={(e) => setSlug(e.target.value)} aria-describedby="con-slug-help" />
      <small id="con-slug-help">Used in the API, e.g. sales-line.</small>
      <label htmlFor="con-name">Name (optional)</label>
      <input id="con-name" value={name} onChange={(e) => setName(e.target.value)} />
      <InvalidNote message={invalid} />
      <ProblemNote error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Create connection
      </button>
    </form>
  );
}
