// The frame: sign-in while signed out, else the navigation and the pages.
import { useMutation } from "@tanstack/react-query";
import { NavLink, Navigate, Route, Routes, useLocation } from "react-router";
import { api, expectOk, queryClient } from "./api";
import { SESSION_KEY, useSession } from "./session";
import { ProblemNote } from "./ui";
import { SignIn } from "./pages/SignIn";
import { Overview } from "./pages/Overview";
import { ApiKeys } from "./pages/ApiKeys";
import { Connections } from "./pages/Connections";
import { MessageDetail, Messages } from "./pages/Messages";
import { Chats, ChatView } from "./pages/Chats";
import { GroupDetail, Groups } from "./pages/Groups";
import { Webhooks } from "./pages/Webhooks";
import { AcceptInvitation, Team } from "./pages/Team";
import { McpClients } from "./pages/McpClients";
import { Events } from "./pages/Events";
import { Consent } from "./pages/Consent";
import { CONSENT_PAGE_PATH } from "@svc/sdk/contract";
import { Schedules } from "./pages/Schedules";
import { Ai } from "./pages/Ai";

/** The API's description (the OpenAPI document), served beside the API. */
const OPENAPI_PATH = "/v1/openapi.json";

/** The address the invitation e-mail links to (server/team/service.ts), signed in or not yet a member. */
const ACCEPT_PATH = "/invitations/accept";

const NAV = [
  { to: "/", label: "Overview" },
  { to: "/connections", label: "Connections" },
  { to: "/messages", label: "Messages" },
  { to: "/chats", label: "Chats" },
  { to: "/groups", label: "Groups" },
  { to: "/schedules", label: "Schedules" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/api-keys", label: "API keys" },
  { to: "/team", label: "Team" },
  { to: "/mcp-clients", label: "MCP clients" },
  { to: "/events", label: "Events" },
  { to: "/ai", label: "AI" },
] as const;

export function App() {
  const session = useSession();
  const { pathname } = useLocation();
  if (session.isPending) return <p role="status">Loading…</p>;
  if (session.error) return <ProblemNote error={session.error} />;
  if (!session.data) return <SignIn />;
  const { user, workspace, role } = session.data;
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">svc-gateway</span>
        <span className="who">
          {workspace?.name ?? "No workspace"} · {user.email}
          {role && ` (${role})`}
        </span>
        <SignOut />
      </header>
      <nav aria-label="Main">
        <ul>
          {NAV.map((n) => (
            <li key={n.to}>
              <NavLink to={n.to} end>
                {n.label}
              </NavLink>
            </li>
          ))}
          <li>
            {/* The machine-readable description every generated client starts from (OpenAPI 3.1). */}
            <a href={OPENAPI_PATH} target="_blank" rel="noreferrer">
              API reference<span aria-hidden="true"> ↗</span>
            </a>
          </li>
        </ul>
      </nav>
      <main>
        {pathname === ACCEPT_PATH ? (
          <AcceptInvitation />
        ) : pathname === CONSENT_PAGE_PATH ? (
          <Consent workspace={workspace?.name ?? null} email={user.email} />
        ) : workspace && role ? (
          <Routes>
            <Route path="/" element={<Overview />} />
            <Route path="/connections" element={<Connections role={role} />} />
            <Route path="/messages" element={<Messages />} />
            <Route path="/messages/:id" element={<MessageDetail />} />
            <Route path="/chats/:connection?" element={<Chats />} />
            <Route path="/chats/:connection/:chat" element={<ChatView role={role} />} />
            <Route path="/groups/:connection?" element={<Groups role={role} />} />
            <Route path="/groups/:connection/:group" element={<GroupDetail role={role} />} />
            <Route path="/schedules" element={<Schedules role={role} />} />
            <Route path="/webhooks" element={<Webhooks role={role} />} />
            <Route path="/api-keys" element={<ApiKeys role={role} />} />
            <Route path="/team" element={<Team userId={user.id} />} />
            <Route path="/mcp-clients" element={<McpClients />} />
            <Route path="/events" element={<Events />} />
            <Route path="/ai/*" element={<Ai role={role} />} />
            <Route path="*" element={<Navigate to="/" replace />} />
          </Routes>
        ) : (
          <p>This address has no workspace yet: accept the invitation you were sent, or ask the operator for one.</p>
        )}
      </main>
    </div>
  );
}

function SignOut() {
  const logout = useMutation({
    mutationFn: () => expectOk(api.auth.logout()),
    onSettled: () => {
      queryClient.clear();
      queryClient.setQueryData(SESSION_KEY, null);
    },
  });
  return (
    <button type="button" className="secondary" onClick={() => logout.mutate()} disabled={logout.isPending}>
      Sign out
    </button>
  );
}
