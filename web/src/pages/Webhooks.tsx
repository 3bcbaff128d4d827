// Webhook endpoints: register with the events to send (the signing secret shown once), delete,
// and each endpoint's delivery log with every attempt and a resend.
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { CreateWebhookEndpointBody, sessionMayUse, WEBHOOK_EVENTS, type Role } from "@svc/sdk/contract";
import type { WebhookEndpoint } from "@svc/sdk";
import { api, expectOk, queryClient } from "../api";
import { StateBadge } from "../badges";
import { CopyableValue } from "../copy";
import { formatCount } from "../format";
import { CheckboxGroup, ConnectionName, formatDate, InvalidNote, issuesText, Page, ProblemNote } from "../ui";
import { DangerAction } from "../confirm";

const LIST = ["webhook-endpoints"] as const;

export function Webhooks({ role }: { role: Role }) {
  const canWrite = sessionMayUse(role, "webhooks:write");
  const list = useQuery({ queryKey: LIST, queryFn: () => expectOk(api.webhooks.list()) });
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const remove = useMutation({
    mutationFn: (id: string) => expectOk(api.webhooks.delete({ params: { id } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: LIST }),
  });
  return (
    <Page title="Webhooks">
      {secret && (
        <div className="secret" role="region" aria-label="New signing secret">
          <p>
            Signing secret for <strong>{secret.url}</strong>: copy it now. It is shown only once.
          </p>
          <CopyableValue value={secret.secret} label="Signing secret value" what="the signing secret" />
          <button type="button" onClick={() => setSecret(null)}>
            I have copied it
          </button>
        </div>
      )}
      {canWrite && <CreateForm onCreated={(url, s) => setSecret({ url, secret: s })} />}
      <ProblemNote error={list.error ?? remove.error} />
      <h2>Endpoints</h2>
      {list.data && list.data.data.length === 0 && <p>No endpoints yet.</p>}
      <ul className="rows">
        {list.data?.data.map((e: WebhookEndpoint) => (
          <li key={e.id}>
            <span className="row-main">
              <strong>{e.url}</strong>
              <span className="meta">
                {e.events.join(", ")}
                {e.connection && (
                  <>
                    {" · only "}
                    <ConnectionName slug={e.connection} />
                  </>
                )}
              </span>
            </span>
            <span className="actions">
              <button type="button" aria-expanded={open === e.id} onClick={() => setOpen(open === e.id ? null : e.id)} aria-label={`Deliveries of ${e.url}`}>
                Deliveries
              </button>
              {canWrite && (
                <DangerAction
                  label="Delete"
                  name={`Delete ${e.url}`}
                  title="Delete this endpoint?"
                  consequence={
                    <p>
                      <code>{e.url}</code> receives no more events, and deliveries still waiting for it are canceled.
                    </p>
                  }
                  confirmLabel="Delete endpoint"
                  onConfirm={() => remove.mutate(e.id)}
                />
              )}
            </span>
            {open === e.id && <Deliveries endpoint={e} canResend={canWrite} />}
          </li>
        ))}
      </ul>
    </Page>
  );
}

function CreateForm({ onCreated }: { onCreated: (url: string, secret: string) => void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>([]);
  const [invalid, setInvalid] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (body: CreateWebhookEndpointBody) => expectOk(api.webhooks.create({ body })),
    onSuccess: (created) => {
      onCreated(created.url, created.secret);
      setUrl("");
      setEvents([]);
      void queryClient.invalidateQueries({ queryKey: LIST });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // A new try: the previous answer's problem no longer applies.
    create.reset();
    const parsed = CreateWebhookEndpointBody.safeParse({ url: url.trim(), events });
    setInvalid(parsed.success ? null : issuesText(parsed.error.issues));
    if (parsed.success) create.mutate(parsed.data);
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="wh-title">
      <h2 id="wh-title">New endpoint</h2>
      <label htmlFor="wh-url">Endpoint URL</label>
      <input id="wh-url" type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />
      <CheckboxGroup legend="Events" options={WEBHOOK_EVENTS} selected={events} onChange={setEvents} />
      <InvalidNote message={invalid} />
      <ProblemNote error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Add endpoint
      </button>
    </form>
  );
}

function Deliveries({ endpoint, canResend }: { endpoint: WebhookEndpoint; canResend: boolean }) {
  const key = ["webhook-deliveries", endpoint.id];
  const deliveries = useQuery({ queryKey: key, queryFn: () => expectOk(api.webhooks.listDeliveries({ params: { id: endpoint.id }, query: { limit: 25 } })), refetchInterval: 3_000 });
  const resend = useMutation({
    mutationFn: (deliveryId: string) => expectOk(api.webhooks.resendDelivery({ params: { id: endpoint.id, deliveryId } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: key }),
  });
  return (
    <div className="deliveries" role="region" aria-label={`Deliveries of ${endpoint.url}`}>
      <ProblemNote error={deliveries.error ?? resend.error} />
      {deliveries.data && deliveries.data.data.length === 0 && <p>No deliveries yet.</p>}
      <ul>
        {deliveries.data?.data.map((d) => (
          <li key={d.id}>
            <strong>{d.event_type}</strong> <StateBadge kind="delivery" value={d.status} label={`Status of ${d.id}`} /> · {formatCount(d.attempt_count)} {d.attempt_count === 1 ? "attempt" : "attempts"} · {formatDate(d.created_at)}
            <ol>
              {d.attempts.map((a, i) => (
                <li key={i}>
                  {a.trigger} · {formatDate(a.attempted_at)} · {a.status_code ?? a.error_code ?? "no answer"} · {formatCount(a.latency_ms)} ms
                </li>
              ))}
            </ol>
            {canResend && (
              <button type="button" onClick={() => resend.mutate(d.id)} disabled={resend.isPending} aria-label={`Resend ${d.event_type} ${d.id}`}>
                Resend
              </button>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
