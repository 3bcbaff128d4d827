import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import { principalOf } from "../http/principal.js";
import { connectionView, type ConnectionService } from "./service.js";

const s = initServer();

export function connectionsRouter(connections: ConnectionService) {
  return s.router(contract.connections, {
    create: async ({ body, res }) => {
      const { connection, callbackToken } = await connections.create(principalOf(res), body);
      return { status: 201, body: { ...connectionView(connection), callback_token: callbackToken } };
    },
    list: async ({ res }) => {
      return { status: 200, body: { data: (await connections.list(principalOf(res))).map(connectionView) } };
    },
    get: async ({ params, res }) => {
      return { status: 200, body: connectionView(await connections.get(principalOf(res), params.connection)) };
    },
    update: async ({ params, body, res }) => {
      return { status: 200, body: connectionView(await connections.move(principalOf(res), params.connection, body.transport)) };
    },
    delete: async ({ params, res }) => {
      await connections.delete(principalOf(res), params.connection);
      return { status: 204, body: undefined };
    },
    pair: {
      // No body at all is a QR pairing, as the spec has it: validated as the empty object.
      middleware: [
        (req, _res, next) => {
          if (req.body === undefined) req.body = {} as typeof req.body;
          next();
        },
      ],
      handler: async ({ params, body, res }) => {
        const grant = await connections.pair(principalOf(res), params.connection, body);
        return { status: 200, body: { grant_id: grant.id, method: grant.method, expires_at: grant.expiresAt.toISOString() } };
      },
    },
    qr: async ({ params, res }) => {
      const grant = await connections.redeem(principalOf(res), params.connection, params.grantId);
      // The payload (or code) is a credential: no cache may keep it.
      res.setHeader("Cache-Control", "no-store");
      const common = { grant_id: grant.grantId, expires_at: grant.expiresAt.toISOString() };
      if (grant.method === "code") return { status: 200, body: { ...common, method: "code" as const, code: grant.code } };
      return { status: 200, body: { ...common, method: "qr" as const, payload: grant.payload, qr_svg: grant.qrSvg } };
    },
    settings: async ({ params, body, res }) => {
      // The proxy URL may carry a password: no cache may keep even its masked form.
      res.setHeader("Cache-Control", "no-store");
      return { status: 200, body: await connections.updateSettings(principalOf(res), params.connection, body) };
    },
    suspend: async ({ params, res }) => {
      return { status: 200, body: connectionView(await connections.suspend(principalOf(res), params.connection)) };
    },
    resume: async ({ params, res }) => {
      return { status: 200, body: connectionView(await connections.resume(principalOf(res), params.connection)) };
    },
  });
}
