// Team: members and their roles, pending invitations, inviting (only to the roles the member may
// assign, as the API lists them), and the page the invitation e-mail links to.
import { useState, type FormEvent } from "react";
import { useNavigate, useSearchParams } from "react-router";
import { useMutation, useQuery } from "@tanstack/react-query";
import { InviteMemberBody, type Role } from "@svc/sdk/contract";
import { api, expectOk, queryClient } from "../api";
import { SESSION_KEY } from "../session";
import { formatDate, InvalidNote, Page, ProblemNote } from "../ui";
import { Badge } from "../badges";
import { DangerAction } from "../confirm";

const TEAM = ["team"] as const;
const refresh = () => queryClient.invalidateQueries({ queryKey: TEAM });

export function Team({ userId }: { userId: string }) {
  const team = useQuery({ queryKey: TEAM, queryFn: () => expectOk(api.team.list()) });
  const update = useMutation({ mutationFn: (v: { id: string; role: Role }) => expectOk(api.team.update({ params: { id: v.id }, body: { role: v.role } })), onSuccess: refresh });
  const remove = useMutation({ mutationFn: (id: string) => expectOk(api.team.remove({ params: { id } })), onSuccess: refresh });
  const cancel = useMutation({ mutationFn: (id: string) => expectOk(api.team.cancelInvitation({ params: { id } })), onSuccess: refresh });
  const assignable = team.data?.assignable_roles ?? [];
  return (
    <Page title="Team">
      {assignable.length > 0 && <InviteForm roles={assignable} />}
      <ProblemNote error={team.error ?? update.error ?? remove.error ?? cancel.error} />
      <h2>Members</h2>
      <ul className="rows">
        {team.data?.members.map((m) => (
          <li key={m.id}>
            <span>
              <strong>{m.email}</strong> <span className="meta">joined {formatDate(m.joined_at)}</span>
            </span>
            <span className="actions">
              {m.user_id !== userId && assignable.includes(m.role) ? (
                <>
                  <label className="visually-hidden" htmlFor={`role-${m.id}`}>
                    Role of {m.email}
                  </label>
                  <select id={`role-${m.id}`} value={m.role} onChange={(e) => update.mutate({ id: m.id, role: e.target.value as Role })}>
                    {assignable.map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                  <DangerAction
                    label="Remove"
                    name={`Remove ${m.email}`}
                    title={`Remove ${m.email}?`}
                    consequence={<p>They lose access to the workspace at once, and the API keys they issued stop working.</p>}
                    confirmLabel="Remove member"
                    onConfirm={() => remove.mutate(m.id)}
                  />
                </>
              ) : (
                <Badge tone="quiet">{m.role}</Badge>
              )}
            </span>
          </li>
        ))}
      </ul>
      <h2>Pending invitations</h2>
      {team.data && team.data.invitations.length === 0 && <p>None.</p>}
      <ul className="rows">
        {team.data?.invitations.map((i) => (
          <li key={i.id}>
            <span>
              <strong>{i.email}</strong> <Badge tone="info">{i.role}</Badge> <span className="meta">expires {formatDate(i.expires_at)}</span>
            </span>
            {assignable.length > 0 && (
              <DangerAction
                label="Cancel"
                name={`Cancel the invitation of ${i.email}`}
                title={`Cancel the invitation of ${i.email}?`}
                consequence={<p>The link in the invitation e-mail stops working; you can invite them again later.</p>}
                confirmLabel="Cancel invitation"
                onConfirm={() => cancel.mutate(i.id)}
              />
            )}
          </li>
        ))}
      </ul>
    </Page>
  );
}

function InviteForm({ roles }: { roles: Role[] }) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>(roles.includes("developer") ? "developer" : roles[roles.length - 1]!);
  const [invalid, setInvalid] = useState<string | null>(null);
  const invite = useMutation({
    mutationFn: (body: InviteMemberBody) => expectOk(api.team.invite({ body })),
    onSuccess: () => {
      setEmail("");
      void refresh();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // A new try: the previous answer's problem no longer applies.
    invite.reset();
    const parsed = InviteMemberBody.safeParse({ email: email.trim(), role });
    setInvalid(parsed.success ? null : "Enter a valid e-mail address.");
    if (parsed.success) invite.mutate(parsed.data);
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby="invite-title">
      <h2 id="invite-title">Invite a member</h2>
      <label htmlFor="invite-email">E-mail address to invite</label>
      <input id="invite-email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <label htmlFor="invite-role">Role</label>
      <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
        {roles.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      <InvalidNote message={invalid} />
      <ProblemNote error={invite.error} />
      <button type="submit" disabled={invite.isPending}>
        Send invitation
      </button>
    </form>
  );
}

/** Where the invitation e-mail links (`/invitations/accept?token=…`); the token stays in the URL only. */
export function AcceptInvitation() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const token = params.get("token") ?? "";
  const accept = useMutation({
    mutationFn: () => expectOk(api.team.accept({ body: { token } })),
    onSuccess: async () => {
      queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] });
      await queryClient.invalidateQueries({ queryKey: SESSION_KEY });
      await navigate("/", { replace: true });
    },
  });
  return (
    <Page title="Accept the invitation">
      <p>Join the workspace you were invited to, as the address you are signed in with.</p>
      <ProblemNote error={accept.error} />
      <button type="button" onClick={() => accept.mutate()} disabled={accept.isPending || token === ""}>
        Accept the invitation
      </button>
    </Page>
  );
}
