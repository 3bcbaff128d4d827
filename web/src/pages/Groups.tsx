// Groups (docs/groups.md): the groups a connection's number is in, one group's members and
// their roles; creating a group, adding and removing members, promoting and demoting them, each
// answer shown as an outcome per participant. Changes need a role that may grant
// connections:write (owner, admin, developer); a viewer reads. The network lets only a group's
// admins change its members, so those controls show where the linked number is one.
import { useCallback, useState, type FormEvent } from "react";
import { Link, useParams } from "react-router";
import { useMutation, useQuery } from "@tanstack/react-query";
import {
  CreateGroupBody,
  ParticipantsBody,
  sessionMayUse,
  type Group,
  type GroupParticipant,
  type ParticipantAction,
  type ParticipantOutcome,
  type Role,
} from "@svc/sdk/contract";
import { api, expectOk, queryClient } from "../api";
import { StateBadge } from "../badges";
import { DangerAction } from "../confirm";
import { useConnections } from "../connections";
import { PageButtons, useCursorPages } from "../cursor-pages";
import { useEventStream, type StreamedEvent } from "../event-stream";
import { formatCount } from "../format";
import { ConnectionName, ConnectionPicker, formatDate, InvalidNote, issuesText, Page, ProblemNote } from "../ui";
import { chatPath } from "./Chats";

const PAGE_SIZE = 25;
const groupsKey = (connection: string) => ["groups", connection] as const;
const groupPath = (connection: string, group: string) => `/groups/${connection}/${encodeURIComponent(group)}`;

/** Numbers typed one per line, or separated by commas or spaces. */
function phonesOf(text: string): string[] {
  return text.split(/[\s,;]+/).filter(Boolean);
}

/** The network's group events of this connection refresh what the page shows. */
function useGroupEvents(connection: string) {
  useEventStream(
    useCallback(
      (e: StreamedEvent) => {
        if (e.connection === connection && e.type.startsWith("group.")) void queryClient.invalidateQueries({ queryKey: groupsKey(connection) });
      },
      [connection],
    ),
  );
}

export function Groups({ role }: { role: Role }) {
  const { connection = "" } = useParams();
  return (
    <Page title="Groups">
      <ConnectionPicker base="groups" current={connection} />
      {connection && <GroupList key={connection} connection={connection} canWrite={sessionMayUse(role, "connections:write")} />}
    </Page>
  );
}

function GroupList({ connection, canWrite }: { connection: string; canWrite: boolean }) {
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const list = useQuery({
    queryKey: [...groupsKey(connection), "list", cursor],
    queryFn: () => expectOk(api.groups.list({ params: { connection }, query: { limit: PAGE_SIZE, ...(cursor && { cursor }) } })),
  });
  useGroupEvents(connection);
  return (
    <>
      {canWrite && <CreateGroupForm connection={connection} />}
      <h2>
        Groups of <ConnectionName slug={connection} />
      </h2>
      <ProblemNote error={list.error} />
      {list.data && list.data.data.length === 0 && <p>The number is in no group yet.</p>}
      <ul className="rows" aria-label="Groups">
        {list.data?.data.map((g) => (
          <li key={g.id}>
            <span className="row-main">
              <span className="row-title">
                <Link to={groupPath(connection, g.id)}>{g.subject}</Link>
                {g.own_role && <StateBadge kind="groupRole" value={g.own_role} label={`Our role in ${g.subject}: ${g.own_role}`} />}
              </span>
              <span className="meta">
                {g.size === 1 ? "1 member" : `${formatCount(g.size)} members`} · created {formatDate(g.created_at)}
              </span>
            </span>
          </li>
        ))}
      </ul>
      <PageButtons pages={pages} nextCursor={list.data?.next_cursor} />
    </>
  );
}

/** What happened to each participant named, as the API answered. */
function Outcomes({ title, outcomes }: { title: string; outcomes: readonly ParticipantOutcome[] }) {
  return (
    <section className="notice" aria-label={title} role="status">
      <strong>{title}</strong>
      <ul className="rows">
        {outcomes.map((o) => (
          <li key={o.phone}>
            {o.phone} <StateBadge kind="participant" value={o.outcome} label={`${o.phone}: ${o.outcome}`} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function CreateGroupForm({ connection }: { connection: string }) {
  const [subject, setSubject] = useState("");
  const [participants, setParticipants] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (body: CreateGroupBody) => expectOk(api.groups.create({ params: { connection }, body })),
    onSuccess: () => {
      setSubject("");
      setParticipants("");
      void queryClient.invalidateQueries({ queryKey: groupsKey(connection) });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // Not retried by itself: a second create makes a second group.
    if (create.isPending) return;
    create.reset();
    const parsed = CreateGroupBody.safeParse({ subject: subject.trim(), participants: phonesOf(participants) });
    setInvalid(parsed.success ? null : issuesText(parsed.error.issues));
    if (parsed.success) create.mutate(parsed.data);
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="group-create-title">
      <h2 id="group-create-title">New group</h2>
      <label htmlFor="group-subject">Subject</label>
      <input id="group-subject" required maxLength={100} value={subject} onChange={(e) => setSubject(e.target.value)} />
      <label htmlFor="group-participants">Members</label>
      <textarea id="group-participants" rows={3} value={participants} onChange={(e) => setParticipants(e.target.value)} aria-describedby="group-participants-help" />
      <small id="group-participants-help">Phone numbers in international format, one per line, at most 256.</small>
      <InvalidNote message={invalid} />
      <ProblemNote error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Create group
      </button>
      {create.data && (
        <>
          <p>
            Created <Link to={groupPath(connection, create.data.id)}>{create.data.subject}</Link>.
          </p>
          <Outcomes title={`Members of ${create.data.subject}`} outcomes={create.data.outcomes} />
        </>
      )}
    </form>
  );
}

const DONE: Record<ParticipantAction, string> = { add: "Added", remove: "Removed", promote: "Promoted", demote: "Demoted" };

export function GroupDetail({ role }: { role: Role }) {
  const { connection = "", group = "" } = useParams();
  const canWrite = sessionMayUse(role, "connections:write");
  const linkedPhone = useConnections().data?.data.find((c) => c.slug === connection)?.phone ?? null;
  const detail = useQuery({
    queryKey: [...groupsKey(connection), "group", group],
    queryFn: () => expectOk(api.groups.get({ params: { connection, group } })),
  });
  useGroupEvents(connection);
  const [last, setLast] = useState<{ action: ParticipantAction; outcomes: ParticipantOutcome[] } | null>(null);
  const act = useMutation({
    mutationFn: (body: ParticipantsBody) => expectOk(api.groups.participants({ params: { connection, group }, body })),
    onMutate: () => setLast(null),
    onSuccess: (answer, body) => {
      setLast({ action: body.action, outcomes: answer.data });
      void queryClient.invalidateQueries({ queryKey: groupsKey(connection) });
    },
  });
  const g = detail.data;
  // The network lets only a group's admins change its members.
  const mayManage = canWrite && (g?.own_role === "admin" || g?.own_role === "superadmin");
  return (
    <Page title={g ? g.subject : "Group"}>
      <p>
        <Link to={`/groups/${connection}`}>All groups of {connection}</Link>
      </p>
      <ProblemNote error={detail.error} />
      {g && (
        <>
          <GroupFacts group={g} connection={connection} />
          <h2>Members</h2>
          {last && <Outcomes title={`${DONE[last.action]}: outcome per member`} outcomes={last.outcomes} />}
          <ProblemNote error={act.error} />
          <ul className="rows" aria-label="Members">
            {g.participants.map((p) => (
              <MemberRow
                key={p.phone ?? p.lid}
                participant={p}
                subject={g.subject}
                isUs={p.phone !== null && p.phone === linkedPhone}
                mayManage={mayManage}
                busy={act.isPending}
                onAct={(action) => p.phone && act.mutate({ action, participants: [p.phone] })}
              />
            ))}
          </ul>
          {mayManage ? (
            <AddMembersForm busy={act.isPending} onAdd={(participants) => act.mutate({ action: "add", participants })} />
          ) : canWrite ? (
            <p className="notice">The linked number is not an admin of this group: the network lets only admins change its members.</p>
          ) : (
            <p className="notice">Your role ({role}) reads groups; changing them needs the developer role or higher.</p>
          )}
        </>
      )}
    </Page>
  );
}

function GroupFacts({ group: g, connection }: { group: Group; connection: string }) {
  return (
    <dl className="facts">
      <dt>Group ID</dt>
      <dd>
        <code>{g.id}</code>
      </dd>
      <dt>Our role</dt>
      <dd>{g.own_role ? <StateBadge kind="groupRole" value={g.own_role} /> : "left the group"}</dd>
      <dt>Members</dt>
      <dd>{formatCount(g.size)}</dd>
      {g.description && (
        <>
          <dt>Description</dt>
          <dd>{g.description}</dd>
        </>
      )}
      <dt>Who may post</dt>
      <dd>{g.announce ? "admins only" : "every member"}</dd>
      <dt>Who may edit the group</dt>
      <dd>{g.locked ? "admins only" : "every member"}</dd>
      <dt>Chat</dt>
      <dd>
        <Link to={chatPath(connection, `group:${g.id}`)}>Open the group's chat</Link>
      </dd>
    </dl>
  );
}

function MemberRow({
  participant: p,
  subject,
  isUs,
  mayManage,
  busy,
  onAct,
}: {
  participant: GroupParticipant;
  subject: string;
  isUs: boolean;
  mayManage: boolean;
  busy: boolean;
  onAct: (action: ParticipantAction) => void;
}) {
  const who = p.phone ?? p.lid ?? "?";
  // A member the network names only by LID cannot be addressed by the API (it takes numbers).
  const actionable = mayManage && !isUs && p.phone !== null && p.role !== "superadmin";
  return (
    <li>
      <span className="row-main">
        <span className="row-title">
          {who}
          {isUs && " (this connection)"}
          <StateBadge kind="groupRole" value={p.role} label={`Role of ${who}: ${p.role}`} />
        </span>
      </span>
      {actionable && (
        <span className="actions">
          {p.role === "member" ? (
            <button type="button" className="secondary" onClick={() => onAct("promote")} disabled={busy} aria-label={`Promote ${who} to admin`}>
              Promote
            </button>
          ) : (
            <button type="button" className="secondary" onClick={() => onAct("demote")} disabled={busy} aria-label={`Demote ${who} to member`}>
              Demote
            </button>
          )}
          <DangerAction
            label="Remove"
            name={`Remove ${who}`}
            title={`Remove ${who} from ${subject}?`}
            consequence={<p>They leave the group at once; adding them back may need their consent.</p>}
            confirmLabel="Remove from group"
            onConfirm={() => onAct("remove")}
            disabled={busy}
          />
        </span>
      )}
    </li>
  );
}

function AddMembersForm({ busy, onAdd }: { busy: boolean; onAdd: (participants: string[]) => void }) {
  const [text, setText] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    const parsed = ParticipantsBody.safeParse({ action: "add", participants: phonesOf(text) });
    setInvalid(parsed.success ? null : issuesText(parsed.error.issues));
    if (!parsed.success) return;
    onAdd(parsed.data.participants);
    setText("");
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="group-add-title">
      <h3 id="group-add-title">Add members</h3>
      <label htmlFor="group-add">Phone numbers</label>
      <textarea id="group-add" rows={2} value={text} onChange={(e) => setText(e.target.value)} aria-describedby="group-add-help" />
      <small id="group-add-help">International format, one per line, at most 256.</small>
      <InvalidNote message={invalid} />
      <button type="submit" disabled={busy}>
        Add to group
      </button>
    </form>
  );
}
