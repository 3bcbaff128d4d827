// Schedules: the list (status filter, pages), each schedule's next run in its own zone, pause /
// resume / cancel as its status and the member's role allow, and the create form with a live
// preview of the next five runs (POST /v1/schedules/preview, asked for once typing pauses).
import { useEffect, useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { DateTime } from "luxon";
import { CreateScheduleBody, nextStatus, PreviewScheduleBody, SCHEDULE_STATUSES, sessionMayUse, type Role, type ScheduleAction } from "@svc/sdk/contract";
import type { Schedule } from "@svc/sdk";
import { api, expectOk, queryClient } from "../api";
import { useConnections } from "../connections";
import { StateBadge } from "../badges";
import { formatCount } from "../format";
import { CheckboxGroup, ConnectionName, ConnectionOptions, InvalidNote, issuesText, Page, ProblemNote } from "../ui";
import { DangerAction } from "../confirm";

const LIST = ["schedules"] as const;
const refresh = () => queryClient.invalidateQueries({ queryKey: LIST });
/** The API lists every schedule at once (docs/schedules.md); the page shows them this many at a time. */
const PAGE_SIZE = 20;
/** How long typing must pause before the preview is asked for. */
const PREVIEW_DELAY_MS = 400;
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;

/** An instant as a zone shows it: weekday, date, time and that moment's UTC offset. */
function zonedText(dt: DateTime): string {
  return dt.isValid ? `${WEEKDAYS[dt.weekday % 7]} ${dt.toFormat("yyyy-MM-dd HH:mm")} (UTC${dt.toFormat("ZZ")})` : "—";
}

function ruleText(s: Schedule["recurrence"]): string {
  const at = `${String(s.hour).padStart(2, "0")}:${String(s.minute).padStart(2, "0")}`;
  switch (s.type) {
    case "daily":
      return `daily at ${at}`;
    case "weekly":
      return `weekly on ${[...s.days_of_week].sort().map((d) => WEEKDAYS[d]).join(", ")} at ${at}`;
    case "monthly":
      return `monthly on ${s.day_of_month === -1 ? "the last day" : `day ${s.day_of_month}`} at ${at}`;
  }
}

export function Schedules({ role }: { role: Role }) {
  const canWrite = sessionMayUse(role, "schedules:write");
  const [status, setStatus] = useState("");
  const [pageIndex, setPageIndex] = useState(0);
  const list = useQuery({
    queryKey: [...LIST, status],
    queryFn: () => expectOk(api.schedules.list({ query: status ? { status: status as Schedule["status"] } : {} })),
  });
  const move = useMutation({
    mutationFn: ({ id, action }: { id: string; action: Exclude<ScheduleAction, "complete"> }) => expectOk(api.schedules[action]({ params: { id } })),
    onSuccess: refresh,
  });
  const all = list.data?.data ?? [];
  const pages = Math.max(1, Math.ceil(all.length / PAGE_SIZE));
  const shown = all.slice(pageIndex * PAGE_SIZE, (pageIndex + 1) * PAGE_SIZE);

  return (
    <Page title="Schedules">
      {canWrite && <CreateForm />}
      <h2>Your schedules</h2>
      <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="sch-f-status">Status</label>
        <select
          id="sch-f-status"
          value={status}
          onChange={(e) => {
            setStatus(e.target.value);
            setPageIndex(0);
          }}
        >
          <option value="">All</option>
          {SCHEDULE_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </form>
      <ProblemNote error={list.error ?? move.error} />
      {list.data && all.length === 0 && <p>No schedules match.</p>}
      <ul className="rows" aria-label="Schedules">
        {shown.map((s) => (
          <li key={s.id}>
            <span>
              <strong>{s.name}</strong> <StateBadge kind="schedule" value={s.status} label={`Status of ${s.name}`} /> · {ruleText(s.recurrence)} in {s.timezone}
              {" · "}
              {typeof s.message.connection === "string" && (
                <>
                  <ConnectionName slug={s.message.connection} /> to {typeof s.message.to === "string" ? s.message.to : "…"}
                  {" · "}
                </>
              )}
              fired {formatCount(s.occurrences)} {s.occurrences === 1 ? "time" : "times"}
              {s.next_run_at && (
                <>
                  {" · next run "}
                  <time dateTime={s.next_run_at} aria-label={`Next run of ${s.name}`}>
                    {zonedText(DateTime.fromISO(s.next_run_at, { zone: s.timezone }))}
                  </time>
                </>
              )}
            </span>
            {canWrite && (
              <span className="actions">
                {nextStatus("pause", s.status) && (
                  <button type="button" onClick={() => move.mutate({ id: s.id, action: "pause" })} aria-label={`Pause ${s.name}`}>
                    Pause
                  </button>
                )}
                {nextStatus("resume", s.status) && (
                  <button type="button" onClick={() => move.mutate({ id: s.id, action: "resume" })} aria-label={`Resume ${s.name}`}>
                    Resume
                  </button>
                )}
                {nextStatus("cancel", s.status) && (
                  <DangerAction
                    label="Cancel"
                    name={`Cancel ${s.name}`}
                    title={`Cancel ${s.name} for good?`}
                    consequence={<p>A canceled schedule never runs again and cannot be resumed; pause it instead to stop it for a while.</p>}
                    confirmLabel="Cancel schedule"
                    onConfirm={() => move.mutate({ id: s.id, action: "cancel" })}
                  />
                )}
              </span>
            )}
          </li>
        ))}
      </ul>
      {pages > 1 && (
        <nav aria-label="Pages" className="actions">
          <button type="button" disabled={pageIndex === 0} onClick={() => setPageIndex(pageIndex - 1)}>
            Previous page
          </button>
          <button type="button" disabled={pageIndex >= pages - 1} onClick={() => setPageIndex(pageIndex + 1)}>
            Next page
          </button>
        </nav>
      )}
    </Page>
  );
}

type Form = {
  name: string;
  connection: string;
  to: string;
  body: string;
  timezone: string;
  type: "daily" | "weekly" | "monthly";
  time: string;
  days: (typeof WEEKDAYS)[number][];
  dayOfMonth: string;
  startsAt: string;
  endsAt: string;
  maxOccurrences: string;
};

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

function emptyForm(): Form {
  return { name: "", connection: "", to: "", body: "", timezone: browserZone(), type: "daily", time: "09:00", days: ["Mon"], dayOfMonth: "1", startsAt: "", endsAt: "", maxOccurrences: "" };
}

/** A `datetime-local` value read as the schedule's zone's wall clock, as RFC 3339 with that offset. */
function zonedInstant(value: string, zone: string): string | undefined {
  if (!value) return undefined;
  const dt = DateTime.fromISO(value, { zone });
  // An unknown zone: leave the field out, and the server's answer names the zone.
  return dt.isValid ? dt.toISO({ suppressMilliseconds: true })! : undefined;
}

/** The timing fields of the form as the preview and create bodies take them (not yet validated). */
function timingOf(f: Form): Record<string, unknown> {
  const [hour, minute] = f.time.split(":").map(Number);
  const common = { hour, minute };
  const recurrence =
    f.type === "daily"
      ? { type: "daily", ...common }
      : f.type === "weekly"
        ? { type: "weekly", ...common, days_of_week: f.days.map((d) => WEEKDAYS.indexOf(d)).sort() }
        : { type: "monthly", ...common, day_of_month: Number(f.dayOfMonth) };
  const startsAt = zonedInstant(f.startsAt, f.timezone.trim());
  const endsAt = zonedInstant(f.endsAt, f.timezone.trim());
  return {
    timezone: f.timezone.trim(),
    recurrence,
    ...(startsAt && { starts_at: startsAt }),
    ...(endsAt && { ends_at: endsAt }),
    ...(f.maxOccurrences.trim() && { max_occurrences: Number(f.maxOccurrences) }),
  };
}

/** `value` once it has stopped changing for `ms`. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

function CreateForm() {
  const [form, setForm] = useState<Form>(emptyForm);
  const [invalid, setInvalid] = useState<string | null>(null);
  const set = <K extends keyof Form>(k: K, v: Form[K]) => setForm((f) => ({ ...f, [k]: v }));
  const connections = useConnections();
  const create = useMutation({
    mutationFn: (body: CreateScheduleBody) => expectOk(api.schedules.create({ body })),
    onSuccess: () => {
      setForm(emptyForm());
      void refresh();
    },
  });
  const firstConnection = connections.data?.data[0]?.slug ?? "";
  const connection = form.connection || firstConnection;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // A new try: the previous answer's problem no longer applies.
    create.reset();
    const parsed = CreateScheduleBody.safeParse({
      name: form.name.trim(),
      ...timingOf(form),
      message: { connection, to: form.to.trim(), ...(form.body && { body: form.body }) },
    });
    setInvalid(parsed.success ? null : issuesText(parsed.error.issues));
    if (parsed.success) create.mutate(parsed.data);
  };
  const id = (k: string) => `sch-${k}`;
  return (
    <form onSubmit={submit} noValidate aria-labelledby="sch-create-title">
      <h2 id="sch-create-title">New schedule</h2>
      <label htmlFor={id("name")}>Name</label>
      <input id={id("name")} required maxLength={80} value={form.name} onChange={(e) => set("name", e.target.value)} />
      <label htmlFor={id("connection")}>Connection</label>
      <select id={id("connection")} value={connection} onChange={(e) => set("connection", e.target.value)}>
        <ConnectionOptions connections={connections.data?.data} />
      </select>
      {connections.data && connections.data.data.length === 0 && <small>Create a connection first: a schedule sends through one.</small>}
      <label htmlFor={id("to")}>To (phone number)</label>
      <input id={id("to")} required inputMode="tel" value={form.to} onChange={(e) => set("to", e.target.value)} aria-describedby={id("to-help")} />
      <small id={id("to-help")}>With the country code, e.g. +15550001111.</small>
      <label htmlFor={id("body")}>Message</label>
      <textarea id={id("body")} rows={3} maxLength={4096} value={form.body} onChange={(e) => set("body", e.target.value)} />
      <label htmlFor={id("timezone")}>Time zone</label>
      <input id={id("timezone")} required list={id("zones")} value={form.timezone} onChange={(e) => set("timezone", e.target.value)} aria-describedby={id("timezone-help")} />
      <datalist id={id("zones")}>
        {Intl.supportedValuesOf("timeZone").map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
      <small id={id("timezone-help")}>An IANA name such as Europe/Berlin. Times below are this zone's wall clock.</small>
      <label htmlFor={id("type")}>Repeats</label>
      <select id={id("type")} value={form.type} onChange={(e) => set("type", e.target.value as Form["type"])}>
        <option value="daily">daily</option>
        <option value="weekly">weekly</option>
        <option value="monthly">monthly</option>
      </select>
      {form.type === "weekly" && <CheckboxGroup legend="Days of the week" options={WEEKDAYS} selected={form.days} onChange={(days) => set("days", days)} />}
      {form.type === "monthly" && (
        <>
          <label htmlFor={id("day")}>Day of the month</label>
          <select id={id("day")} value={form.dayOfMonth} onChange={(e) => set("dayOfMonth", e.target.value)}>
            {Array.from({ length: 31 }, (_, i) => (
              <option key={i + 1} value={String(i + 1)}>
                {i + 1}
              </option>
            ))}
            <option value="-1">last day</option>
          </select>
        </>
      )}
      <label htmlFor={id("time")}>At (time of day)</label>
      <input id={id("time")} type="time" required value={form.time} onChange={(e) => set("time", e.target.value)} />
      <label htmlFor={id("starts")}>Starts (optional)</label>
      <input id={id("starts")} type="datetime-local" value={form.startsAt} onChange={(e) => set("startsAt", e.target.value)} />
      <label htmlFor={id("ends")}>Ends (optional)</label>
      <input id={id("ends")} type="datetime-local" value={form.endsAt} onChange={(e) => set("endsAt", e.target.value)} />
      <label htmlFor={id("max")}>At most this many runs (optional)</label>
      <input id={id("max")} type="number" min={1} max={10000} inputMode="numeric" value={form.maxOccurrences} onChange={(e) => set("maxOccurrences", e.target.value)} />
      <Preview timing={timingOf(form)} />
      <InvalidNote message={invalid} />
      <ProblemNote error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Create schedule
      </button>
    </form>
  );
}

/** The next five runs of what the form says so far, as the server computes them. */
function Preview({ timing }: { timing: Record<string, unknown> }) {
  const settled = useSettled(JSON.stringify(timing), PREVIEW_DELAY_MS);
  const parsed = PreviewScheduleBody.safeParse(JSON.parse(settled));
  const preview = useQuery({
    queryKey: ["schedule-preview", settled],
    queryFn: () => expectOk(api.schedules.preview({ body: parsed.data! })),
    enabled: parsed.success,
    refetchOnWindowFocus: false,
  });
  const typing = settled !== JSON.stringify(timing);
  return (
    <section aria-labelledby="sch-preview-title" className="preview" aria-busy={typing || preview.isFetching}>
      <h3 id="sch-preview-title">Next five runs</h3>
      {!parsed.success ? (
        <InvalidNote message={issuesText(parsed.error.issues)} />
      ) : preview.error ? (
        <ProblemNote error={preview.error} />
      ) : preview.data ? (
        <ol aria-label="Next runs">
          {preview.data.runs.map((r) => (
            <li key={r.at}>
              <time dateTime={r.at}>{zonedText(DateTime.fromISO(r.local, { setZone: true }))}</time>
            </li>
          ))}
        </ol>
      ) : (
        <p role="status">Working them out…</p>
      )}
    </section>
  );
}
