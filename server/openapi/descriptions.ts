// Descriptions of the operations whose contract route has a summary only (the route's own
// `description`, when it has one, wins). Kept here, not on the routes, because they are prose
// for readers of the document; nothing in the server or the SDK reads them.
export const OPERATION_DESCRIPTIONS: Record<string, string> = {
  connectionsGet: "The connection named by its slug, with its state (`created`, `pairing`, `connected`, `disconnected`, `suspended`) and linked number. 404 for a slug this workspace does not have.",
  connectionsSuspend: "Stops sending and receiving on the connection, keeping its session; queued messages wait. 409 when the connection is not in a state that can be suspended.",
  connectionsResume: "Resumes a suspended connection; queued messages are handed off again. 409 when the connection is not suspended.",
  schedulesList: "Every schedule of the workspace, optionally filtered by `status`, newest first.",
  schedulesGet: "One schedule with its recurrence, status and `next_run_at`.",
  aiListCredentials: "Metadata of the workspace's model-vendor credentials; the secret itself is never returned.",
  aiDeleteCredential: "Deletes a credential; policies using it stop running. 404 for an unknown id.",
  workspaceGet: "The workspace, the caller's role in it, its plan and the usage counted against the plan. Dashboard session only.",
  teamList: "Members with their roles, pending invitations, and the roles the caller may assign. Dashboard session only.",
  teamCancelInvitation: "Withdraws a pending invitation; its link stops working. 404 when it is unknown or already accepted.",
  authSession: "The signed-in user and the workspace of the session; 401 when the `svc_session` cookie is absent or expired.",
  mcpTools: "The tools of the tool endpoint that this credential's scopes allow, with their input schemas.",
  opsOpenapi: "This document: every operation, schema and header of the API, generated from the same contract as the server and the SDK.",
};
