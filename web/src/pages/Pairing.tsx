// Pairing a connection: the panel that stays open until the phone has linked. One section per way
// of pairing (a QR code to scan, or a code to type on the phone, chosen at the top), and, on the
// sandbox engine, a simulated phone that completes it without a real one.
import { useEffect, useState, type FormEvent } from "react";
import { useMutation } from "@tanstack/react-query";
import { QRCodeSVG } from "qrcode.react";
import type { Connection, Pairing, PairingCode, PairingPayload } from "@svc/sdk";
import { api, expectOk, SvcApiError } from "../api";
import { CopyableValue } from "../copy";
import { refreshConnections } from "../connections";
import { samplePhone, SANDBOX_TRANSPORT, simulateEnterCode, simulateScan } from "../sandbox";
import { connectionText, formatDate, ProblemNote } from "../ui";

type Method = "qr" | "code";

export function PairingPanel({ connection, onClose }: { connection: Connection; onClose: () => void }) {
  const connected = connection.state === "connected";
  const [method, setMethod] = useState<Method>("qr");
  return (
    <div className="pairing" role="region" aria-label={`Pairing ${connection.slug}`}>
      <h2>Pair {connectionText(connection)}</h2>
      {connected ? (
        <p role="status">
          Connected{connection.phone ? ` as ${connection.phone}` : ""}.
        </p>
      ) : (
        <>
          <fieldset className="pairing-method">
            <legend>How will the phone link?</legend>
            <label>
              <input type="radio" name="pairing-method" value="qr" checked={method === "qr"} onChange={() => setMethod("qr")} /> Scan a QR code
            </label>
            <label>
              <input type="radio" name="pairing-method" value="code" checked={method === "code"} onChange={() => setMethod("code")} /> Type a code on the phone
            </label>
          </fieldset>
          {method === "qr" ? <QrPairing connection={connection} /> : <CodePairing connection={connection} />}
        </>
      )}
      <button type="button" className={connected ? undefined : "secondary"} onClick={onClose}>
        {connected ? "Done" : "Cancel"}
      </button>
    </div>
  );
}

type PairingRequest = { method: "qr" } | { method: "code"; phone: string };

/**
 * A fresh grant and what it shows (the QR, or the code for `request.phone`); a new one shortly
 * before each expires, until connected or closed. A component using it is keyed by its request.
 */
function usePairingGrant(slug: string, request: PairingRequest): { shown: Pairing | null; error: unknown } {
  const [shown, setShown] = useState<Pairing | null>(null);
  const [error, setError] = useState<unknown>(null);
  const method = request.method;
  const phone = request.method === "code" ? request.phone : undefined;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const body = method === "code" ? { method, phone: phone! } : undefined;
    const next = async (attempt = 1): Promise<void> => {
      try {
        const grant = await expectOk(api.connections.pair({ params: { connection: slug }, ...(body && { body }) }));
        const payload = await expectOk(api.connections.qr({ params: { connection: slug, grantId: grant.grant_id } }));
        if (stopped) return;
        setShown(payload);
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
  }, [slug, method, phone]);
  return { shown, error };
}

function QrPairing({ connection }: { connection: Connection }) {
  const { slug } = connection;
  const { shown, error } = usePairingGrant(slug, QR_REQUEST);
  const qr: PairingPayload | null = shown?.method === "qr" ? shown : null;
  return (
    <>
      <p>Open the messaging app on the phone, choose "Link a device" and scan this code. It refreshes by itself.</p>
      {qr && (
        <>
          <QRCodeSVG value={qr.payload} size={224} marginSize={2} role="img" aria-label={`Pairing QR code for ${slug}`} />
          <p>Valid until {formatDate(qr.expires_at)}.</p>
          <details>
            <summary>Show the code as text</summary>
            <CopyableValue value={qr.payload} label="Pairing payload" what="the pairing payload" />
          </details>
          {connection.transport === SANDBOX_TRANSPORT && (
            <SimulatedPhone action="Simulate the scan" explain="No phone needed on the sandbox engine: a simulated phone scans this code and links as the number below." act={(phone) => simulateScan(qr.payload, phone)} />
          )}
        </>
      )}
      <ProblemNote error={error} />
    </>
  );
}

const QR_REQUEST: PairingRequest = { method: "qr" };

/** Pairing by code: the number first, then the code the network shows for it (refreshed like the QR). */
function CodePairing({ connection }: { connection: Connection }) {
  const [draft, setDraft] = useState("");
  const [phone, setPhone] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setPhone(draft.replace(/[\s()-]/g, ""));
  };
  return (
    <>
      <form onSubmit={submit} aria-label="Ask for a pairing code">
        <label htmlFor="code-phone">Phone number that will link, in international form</label>
        <input id="code-phone" type="tel" autoComplete="off" required placeholder="+15550001111" value={draft} onChange={(e) => setDraft(e.target.value)} />
        <button type="submit">Get a pairing code</button>
      </form>
      {phone && <CodeShown key={phone} connection={connection} phone={phone} />}
    </>
  );
}

/** The code for `phone`, refreshed, and on the sandbox the simulated phone that types it. */
function CodeShown({ connection, phone }: { connection: Connection; phone: string }) {
  const { slug } = connection;
  const { shown, error } = usePairingGrant(slug, { method: "code", phone });
  const code: PairingCode | null = shown?.method === "code" ? shown : null;
  return (
    <>
      {code && (
        <>
          <p>On that phone, open the messaging app, choose "Link a device", then "Link with phone number instead", and type this code. It refreshes by itself.</p>
          <p className="pairing-code">
            <CopyableValue value={code.code} label={`Pairing code for ${slug}`} what="the pairing code" />
          </p>
          <p>Valid until {formatDate(code.expires_at)}.</p>
          {connection.transport === SANDBOX_TRANSPORT && (
            <SimulatedPhone
              initialPhone={phone}
              action="Simulate typing the code"
              explain="No phone needed on the sandbox engine: a simulated phone types this code and links as the number below (the code links only on the number it was asked for)."
              act={(typing) => simulateEnterCode(code.code, typing)}
            />
          )}
        </>
      )}
      <ProblemNote error={error} />
    </>
  );
}

/**
 * The sandbox's phone, completing a pairing as the number typed: `act` is what the phone does
 * (scan the QR, or type the pairing code).
 */
function SimulatedPhone({ action, explain, act, initialPhone }: { action: string; explain: string; act: (phone: string) => Promise<void>; initialPhone?: string }) {
  const [phone, setPhone] = useState(initialPhone ?? samplePhone);
  const run = useMutation({
    mutationFn: () => act(phone.trim()),
    // The connection turns connected when the engine's report lands: read it again now.
    onSuccess: () => refreshConnections(),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run.mutate();
  };
  return (
    <section className="simulate" aria-labelledby="simulate-title">
      <h3 id="simulate-title">Sandbox</h3>
      <p className="help">{explain}</p>
      <form onSubmit={submit} aria-labelledby="simulate-title">
        <label htmlFor="simulate-phone">Phone number of the simulated phone</label>
        <input id="simulate-phone" type="tel" autoComplete="off" required value={phone} onChange={(e) => setPhone(e.target.value)} />
        <ProblemNote error={run.error} />
        <button type="submit" disabled={run.isPending}>
          {action}
        </button>
      </form>
    </section>
  );
}
