// Pairing a connection: the panel that stays open until the phone has linked. One section per way
// of pairing (today the QR code; a pairing method is a component of its own beside QrPairing),
// and, on the sandbox engine, a simulated phone that completes it without a real one.
import { useEffect, useState, type FormEvent } from "react";
import { useMutation } from "@tanstack/react-query";
import { QRCodeSVG } from "qrcode.react";
import type { Connection, PairingPayload } from "@svc/sdk";
import { api, expectOk, SvcApiError } from "../api";
import { CopyableValue } from "../copy";
import { refreshConnections } from "../connections";
import { samplePhone, SANDBOX_TRANSPORT, simulateScan } from "../sandbox";
import { connectionText, formatDate, ProblemNote } from "../ui";

export function PairingPanel({ connection, onClose }: { connection: Connection; onClose: () => void }) {
  const connected = connection.state === "connected";
  return (
    <div className="pairing" role="region" aria-label={`Pairing ${connection.slug}`}>
      <h2>Pair {connectionText(connection)}</h2>
      {connected ? (
        <p role="status">
          Connected{connection.phone ? ` as ${connection.phone}` : ""}.
        </p>
      ) : (
        <QrPairing connection={connection} />
      )}
      <button type="button" className={connected ? undefined : "secondary"} onClick={onClose}>
        {connected ? "Done" : "Cancel"}
      </button>
    </div>
  );
}

/** A fresh grant and its QR; a new one shortly before each expires, until connected or closed. */
function useQrGrant(slug: string): { qr: PairingPayload | null; error: unknown } {
  const [qr, setQr] = useState<PairingPayload | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
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
  }, [slug]);
  return { qr, error };
}

function QrPairing({ connection }: { connection: Connection }) {
  const { slug } = connection;
  const { qr, error } = useQrGrant(slug);
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

/**
 * The sandbox's phone, completing a pairing as the number typed: `act` is what the phone does
 * (scan the QR today; enter a pairing code is the same form with another act).
 */
function SimulatedPhone({ action, explain, act }: { action: string; explain: string; act: (phone: string) => Promise<void> }) {
  const [phone, setPhone] = useState(samplePhone);
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
