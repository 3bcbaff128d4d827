import { initServer } from "@ts-rest/express";
import { contract } from "../../contract/index.js";
import type { Response } from "express";
import { principalOf, sessionOf, type Principal } from "../http/principal.js";
import type { WebhookEndpointService } from "./service.js";

const s = initServer();

/** The key or session calling; a signed-in user who belongs to no workspace yet gets 403, not 401. */
function caller(res: Response): Principal {
  return res.locals.principal ? principalOf(res) : sessionOf(res);
}

export function webhooksRouter(endpoints: WebhookEndpointService) {
  return s.router(contract.webhooks, {
    create: async ({ body, res }) => {
      return { status: 201, body: await endpoints.create(caller(res), body) };
    },
    list: async ({ res }) => {
      return { status: 200, body: { data: await endpoints.list(caller(res)) } };
    },
    delete: async ({ params, res }) => {
      await endpoints.delete(caller(res), params.id);
      return { status: 204, body: undefined };
    },
    listDeliveries: async ({ params, query, res }) => {
      return { status: 200, body: await endpoints.listDeliveries(caller(res), params.id, query) };
    },
    resendDelivery: async ({ params, res }) => {
      return { status: 202, body: await endpoints.resend(caller(res), params.id, params.deliveryId) };
    },
  });
}
