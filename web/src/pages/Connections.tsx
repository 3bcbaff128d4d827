// Connections: create, pair with a live QR (a new grant before the old one expires, "connected"
// as soon as the phone scans), suspend/resume, delete.
import { useEffect, useState, type FormEvent } from "react";
import { useMutation } from "@tanstack/react-query";
import { QRCodeSVG } from "qrcode.react";
import { CreateConnectionBody, sessionMayUse, type Role } from "@svc/sdk/contract";
import type { Connection, PairingPayload } from "@svc/sdk";
import { api, expectOk, SvcApiError } from "../api";
import { refreshConnections, useConnections } from "../connections";
import { formatDate, InvalidNote, Page, ProblemNote } from "../ui";


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
            <span>
              <strong>{c.name ?? c.slug}</strong> <code>{c.slug}</code> · <span aria-label={`State of ${c.slug}`}>{c.state}</span>
              {c.phone && ` · ${c.phone}`} · {c.transport} · created {formatDate(c.created_at)}
            </span>
            {canWrite && (
              <span className="actions">
                {c.state !== "connected" && c.state !== "suspended" && (
                  <button type="button" onClick={() => setPairing(c.slug)} aria-label={`Pair ${c.slug}`}>
                    Pair
                  </button>
                )}
                {c.state === "suspended" ? (
                  <button type="button" onClick={() => resume.mutate(c.slug)} aria-label={`Resume ${c.slug}`}>
                    Resume
                  </button>
                ) : (
                  <button type="button" onClick={() => suspend.mutate(c.slug)} aria-label={`Suspend ${c.slug}`}>
                    Suspend
                  </button>
                )}
                <button
                  type="button"
                  onClick={() => window.confirm(`Delete ${c.slug}? Its phone is unlinked.`) && remove.mutate(c.slug)}
                  aria-label={`Delete ${c.slug}`}
                >
                  Delete
                </button>
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

/** A fresh grant and its QR; a new one shortly before each expires, until connected or closed. */
function PairingPanel({ connection, onClose }: { connection: Connection; onClose: () => void }) {
  const slug = connection.slug;
  const connected = connection.state === "connected";
  const [qr, setQr] = useState<PairingPayload | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    if (connected) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = async (attempt = 1): Promise<void> => {
      try {
        const grant = await expectOk(api.connections.pair({ params: { connection: slug } }));
        const payload = await expectOk(api.connections.qr({ params: { connection: slug, grantId: grant.grant_id } }));
        if (stopped) return;
        setQr(payload);
        setError(null);
        const left = Date.parse(payload.expires_at) - Date.now();
        timer = setTimeout(() => void next(), Math.max(1_000, left - 2_000));
      } catch (err) {
        if (stopped) return;
        // Each pair replaces the connection's grant: a pair of an earlier run of this effect (a
        // remount) that lands after ours leaves our grant gone (404). Ask again; ours is then the last.
        if (err instanceof SvcApiError && err.status === 404 && attempt < 3) return next(attempt + 1);
        setError(err);
      }
    };
    void next();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [slug, connected]);

  return (
    <div className="pairing" role="region" aria-label={`Pairing ${slug}`}>
      <h2>Pair {slug}</h2>
      {connected ? (
        <p role="status">
          Connected{connection.phone ? ` as ${connection.phone}` : ""}.
        </p>
      ) : (
        <>
          <p>Open the messaging app on the phone, choose "Link a device" and scan this code. It refreshes by itself.</p>
          {qr && (
            <>
              <QRCodeSVG value={qr.payload} size={224} marginSize={2} role="img" aria-label={`Pairing QR code for ${slug}`} />
              <p>Valid until {formatDate(qr.expires_at)}.</p>
              <details>
                <summary>Show the code as text</summary>
                <code aria-label="Pairing payload">{qr.payload}</code>
              </details>
            </>
          )}
          <ProblemNote error={error} />
        </>
      )}
      <button type="button" onClick={onClose}>
        {connected ? "Done" : "Cancel"}
      </button>
    </div>
  );
}
