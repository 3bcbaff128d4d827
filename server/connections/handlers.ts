import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { AppContext } from "../context.js";
import { principalOf } from "../http/principal.js";
import { connectionView } from "./service.js";

const s = initServer();

export function connectionsRouter(ctx: AppContext) {
  const connections = ctx.services.connections;
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
    pair: async ({ params, res }) => {
      const grant = await connections.pair(principalOf(res), params.connection);
      return { status: 200, body: { grant_id: grant.id, expires_at: grant.expiresAt.toISOString() } };
    },
    qr: async ({ params, res }) => {
      const grant = await connections.redeem(principalOf(res), params.connection, params.grantId);
      // The payload is a credential: no cache may keep it.
      res.setHeader("Cache-Control", "no-store");
      return { status: 200, body: { grant_id: grant.grantId, payload: grant.payload, qr_svg: grant.qrSvg, expires_at: grant.expiresAt.toISOString() } };
    },
    suspend: async ({ params, res }) => {
      return { status: 200, body: connectionView(await connections.suspend(principalOf(res), params.connection)) };
    },
    resume: async ({ params, res }) => {
      return { status: 200, body: connectionView(await connections.resume(principalOf(res), params.connection)) };
    },
  });
}
