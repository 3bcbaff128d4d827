// Connections (docs/engines.md). Bodies are `.strict()`: unknown
// fields are rejected everywhere.
import { initContract } from "@ts-rest/core";
import { z } from "zod";
import { ConnectionParams, ConnectionRef, NoBody, Timestamp, list, problems, type RouteMetadata, chars } from "./common.js";

const c = initContract();

export const CONNECTION_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,38}[a-z0-9]$/;

const SLUG_RULE = "must be 3-40 lowercase letters, digits and hyphens, not starting or ending with a hyphen";
export const ConnectionSlug = chars(3, 40, { errorMap: () => ({ message: SLUG_RULE }) }).regex(CONNECTION_SLUG_PATTERN);
export type ConnectionSlug = z.infer<typeof ConnectionSlug>;

export const CONNECTION_STATES = ["created", "pairing", "connected", "disconnected", "suspended"] as const;
export const ConnectionState = z.enum(CONNECTION_STATES);
export type ConnectionState = z.infer<typeof ConnectionState>;

/** The engines a gateway can run (server/engines/); a production gateway mounts only `baileys`. */
export const ENGINE_NAMES = ["sandbox", "baileys"] as const;
export const EngineName = z.enum(ENGINE_NAMES);
export type EngineName = z.infer<typeof EngineName>;

export const CreateConnectionBody = z.object({ slug: ConnectionSlug, name: chars(1, 80).optional() }).strict();
export type CreateConnectionBody = z.infer<typeof CreateConnectionBody>;

export const UpdateConnectionBody = z
  .object({
    transport: EngineName.describe(
      "Move the connection to this engine (one configured on this gateway). Only while no device is linked: created, pairing or disconnected; an open pairing grant is withdrawn.",
    ),
  })
  .strict();
export type UpdateConnectionBody = z.infer<typeof UpdateConnectionBody>;

export const GrantParams = z.object({ connection: ConnectionRef, grantId: chars(1, 64) });
export type GrantParams = z.infer<typeof GrantParams>;

export const Connection = z.object({
  id: z.string().describe("Identifier with prefix `con_`"),
  object: z.literal("connection"),
  slug: z.string(),
  name: z.string().nullable(),
  state: ConnectionState,
  phone: z.string().nullable().describe("The linked number once connected"),
  detail: z
    .string()
    .nullable()
    .describe(
      "Why the connection is not connected, when the engine said: `replaced_elsewhere`, `client_version_refused`, `passkey_required`, …; null otherwise",
    ),
  transport: z.string().describe("Engine serving the connection, e.g. `sandbox`"),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Connection = z.infer<typeof Connection>;

export const ConnectionCreated = Connection.extend({
  callback_token: z.string().describe("Authenticates the transport's callbacks; returned only here, never again"),
});
export type ConnectionCreated = z.infer<typeof ConnectionCreated>;

export const ConnectionList = list(Connection);
export type ConnectionList = z.infer<typeof ConnectionList>;

/** How a phone links: by scanning a QR code, or by typing a code shown for its number. */
export const PAIRING_METHODS = ["qr", "code"] as const;
export const PairingMethod = z.enum(PAIRING_METHODS);
export type PairingMethod = z.infer<typeof PairingMethod>;

/** The number that will type the pairing code, in international form: `+`, then 7-15 digits. */
export const PairingPhone = chars(8, 16).regex(/^\+[1-9][0-9]{6,14}$/, { message: "must be a phone number in international form: + and 7-15 digits" });

export const PairBody = z
  .object({
    method: PairingMethod.default("qr").describe("`qr` (the default) or `code`: a code the phone types under Link with phone number"),
    phone: PairingPhone.optional().describe("With `code`: the number that will type the code (required then; refused with `qr`)"),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.method === "code" && b.phone === undefined) ctx.addIssue({ code: "custom", path: ["phone"], message: "is required with method code" });
    if (b.method === "qr" && b.phone !== undefined) ctx.addIssue({ code: "custom", path: ["phone"], message: "is only accepted with method code" });
  });
export type PairBody = z.infer<typeof PairBody>;

export const PairingGrant = z.object({ grant_id: z.string(), method: PairingMethod, expires_at: Timestamp });
export type PairingGrant = z.infer<typeof PairingGrant>;

export const PairingPayload = z.object({
  grant_id: z.string(),
  method: z.literal("qr"),
  payload: z.string().describe("The pairing credential: whoever scans it links their device to the number"),
  qr_svg: z.string().describe("The payload as a QR code, an SVG data URL (`data:image/svg+xml;base64,…`)"),
  expires_at: Timestamp,
});
export type PairingPayload = z.infer<typeof PairingPayload>;

export const PairingCode = z.object({
  grant_id: z.string(),
  method: z.literal("code"),
  code: z.string().describe("The pairing code (`ABCD-EFGH`) to type on the phone whose number the pair named; a credential like the QR payload"),
  expires_at: Timestamp,
});
export type PairingCode = z.infer<typeof PairingCode>;

/** What a redeemed grant shows: the QR, or the code, as the pair asked. */
export const Pairing = z.discriminatedUnion("method", [PairingPayload, PairingCode]);
export type Pairing = z.infer<typeof Pairing>;

/** Schemes a connection's proxy may use: SOCKS (5, 5 with remote DNS, 4) or an HTTP CONNECT proxy. */
export const PROXY_SCHEMES = ["socks5:", "socks5h:", "socks4:", "http:", "https:"] as const;

/** A proxy URL: `socks5://[user:password@]host:port` or `http(s)://[user:password@]host:port`, nothing after the port. */
export const ProxyUrl = chars(1, 2048).superRefine((value, ctx) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return void ctx.addIssue({ code: "custom", message: "must be a URL such as socks5://host:1080 or http://host:3128" });
  }
  if (!(PROXY_SCHEMES as readonly string[]).includes(url.protocol)) ctx.addIssue({ code: "custom", message: `scheme must be one of ${PROXY_SCHEMES.map((s) => s.slice(0, -1)).join(", ")}` });
  else if (!url.hostname) ctx.addIssue({ code: "custom", message: "must name the proxy's host" });
  else if ((url.pathname !== "" && url.pathname !== "/") || url.search || url.hash) ctx.addIssue({ code: "custom", message: "must end at the host and port (no path, query or fragment)" });
});

export const ConnectionSettingsBody = z
  .object({
    proxy_url: ProxyUrl.nullable().describe("The proxy the connection's socket goes through; null: the gateway's default (BAILEYS_PROXY_URL), or none"),
  })
  .strict();
export type ConnectionSettingsBody = z.infer<typeof ConnectionSettingsBody>;

export const ConnectionSettings = z.object({
  proxy_url: z.string().nullable().describe("The proxy URL with its password masked (`socks5://user:****@host:1080`); null when none is set"),
});
export type ConnectionSettings = z.infer<typeof ConnectionSettings>;

// A key, or the dashboard's session (README.md, "The dashboard": it pairs phones with the cookie);
// A key, or the dashboard's session (README.md, "The dashboard": it pairs phones with the cookie);
// a session may change connections when its role may grant connections:write.
const read = { security: { auth: "key_or_session", scope: "connections:read" }, tag: "Connections" } satisfies RouteMetadata;
const write = { security: { auth: "key_or_session", scope: "connections:write" }, tag: "Connections" } satisfies RouteMetadata;

export const connections = c.router(
  {
    create: {
      method: "POST",
      path: "/v1/connections",
      summary: "Create a connection",
      description: "The `callback_token` is in this response only. 402 when the plan has no room for another connection.",
      body: CreateConnectionBody,
      responses: { 201: ConnectionCreated, ...problems(400, 401, 402, 403, 409, 429) },
      metadata: write,
    },
    list: {
      method: "GET",
      path: "/v1/connections",
      summary: "List connections",
      description: "Every live (not deleted) connection of the workspace.",
      responses: { 200: ConnectionList, ...problems(401, 403, 429) },
      metadata: read,
    },
    get: {
      method: "GET",
      path: "/v1/connections/:connection",
      summary: "Retrieve a connection",
      pathParams: ConnectionParams,
      responses: { 200: Connection, ...problems(400, 401, 403, 404, 429) },
      metadata: read,
    },
    update: {
      method: "PATCH",
      path: "/v1/connections/:connection",
      summary: "Move a connection to another engine (extension)",
      description:
        "Moves a connection to another engine, e.g. one created on an engine this gateway does not run (pairing answers 503) to one it does, keeping its slug, id, messages and callback token. " +
        "400 when the engine is not configured here; 409 while a device is linked (connected or suspended).",
      pathParams: ConnectionParams,
      body: UpdateConnectionBody,
      responses: { 200: Connection, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    delete: {
      method: "DELETE",
      path: "/v1/connections/:connection",
      summary: "Delete a connection",
      description: "Soft delete; removal of the connection's data is queued.",
      pathParams: ConnectionParams,
      body: c.noBody(),
      responses: { 204: NoBody, ...problems(400, 401, 403, 404, 429) },
      metadata: write,
    },
    pair: {
      method: "POST",
      path: "/v1/connections/:connection/pair",
      summary: "Open a pairing grant",
      description:
        "Short-lived, single-use grant; redeem it at the QR route. No body (or `method: qr`): the route shows a QR code; `{\"method\": \"code\", \"phone\": \"+15550001111\"}`: it shows a code to type on that phone. 409 unless the state is created, pairing or disconnected.",
      pathParams: ConnectionParams,
      body: PairBody,
      responses: { 200: PairingGrant, ...problems(400, 401, 403, 404, 409, 429, 503) },
      metadata: write,
    },
    qr: {
      method: "GET",
      path: "/v1/connections/:connection/qr/:grantId",
      summary: "Redeem a pairing grant for its QR payload or pairing code",
      description: "Single use: a redeemed or expired grant no longer exists (404). `method` says which the grant shows: a QR payload or a pairing code. Treat either as a credential.",
      pathParams: GrantParams,
      responses: { 200: Pairing, ...problems(400, 401, 403, 404, 429) },
      metadata: write,
    },
    settings: {
      method: "PUT",
      path: "/v1/connections/:connection/settings",
      summary: "Change a connection's settings (extension)",
      description:
        "The proxy its engine's socket goes through (a secret: stored sealed, answered masked). It applies when the socket next opens: at pairing, resume or a reconnect (suspend and resume to apply it at once). Engines without sockets (the sandbox) keep it and ignore it.",
      pathParams: ConnectionParams,
      body: ConnectionSettingsBody,
      responses: { 200: ConnectionSettings, ...problems(400, 401, 403, 404, 429) },
      metadata: write,
    },
    suspend: {
      method: "POST",
      path: "/v1/connections/:connection/suspend",
      summary: "Suspend a connection",
      pathParams: ConnectionParams,
      body: c.noBody(),
      responses: { 200: Connection, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
    resume: {
      method: "POST",
      path: "/v1/connections/:connection/resume",
      summary: "Resume a suspended connection",
      description:
        "Resumes a suspended connection; or, on a connected one whose account the network restricted (`detail: account_restricted`), resumes its sending at once (the operator's call: the network may refuse again and report the restriction again). 409 from any other state.",
      pathParams: ConnectionParams,
      body: c.noBody(),
      responses: { 200: Connection, ...problems(400, 401, 403, 404, 409, 429) },
      metadata: write,
    },
  },
  { strictStatusCodes: true },
);
