// The sandbox control API, /sandbox/v1: plays the phones, the contacts and the faults of the
// simulated network. Mounted only when the sandbox is enabled (never in production), without
// authentication: anyone who can reach it can link a number, so it must never be exposed.
import { Router, type Request, type Response } from "express";
import type { z } from "zod";
import type { Config } from "../../config.js";
import { ApiError, zodFieldErrors } from "../../http/errors.js";
import { unstorableStrings } from "../../http/input-check.js";
import type { EngineRegistry } from "../engine.js";
import { SandboxEngine, SANDBOX_ENGINE } from "./engine.js";
import {
  ContactEditBody,
  ContactRevokeBody,
  EnterCodeBody,
  FaultsBody,
  GroupBody,
  GroupChangeBody,
  GroupMembersBody,
  InboundBody,
  LogoutBody,
  NumberBody,
  PhoneSendBody,
  ReactBody,
  ReceivedQuery,
  RestrictBody,
  ScanBody,
  TypingBody,
  VoteBody,
} from "./schemas.js";

export const SANDBOX_CONTROL_PATH = "/sandbox/v1";

/** The control router when the sandbox is enabled and registered; otherwise null (nothing mounted). */
export function sandboxControl(config: Pick<Config, "sandboxEnabled">, engines: EngineRegistry): Router | null {
  if (!config.sandboxEnabled) return null;
  const engine = engines.get(SANDBOX_ENGINE);
  return engine instanceof SandboxEngine ? controlRouter(engine) : null;
}

function controlRouter(engine: SandboxEngine): Router {
  const network = engine.network;
  const router = Router();
  router.post("/scan", async (req, res) => {
    res.status(200).json(await network.scan(parse(ScanBody, req.body, "body")));
  });
  router.post("/enter-code", async (req, res) => {
    res.status(200).json(await network.enterCode(parse(EnterCodeBody, req.body, "body")));
  });
  router.post("/numbers", async (req, res) => {
    res.status(200).json(await network.declareNumber(parse(NumberBody, req.body, "body")));
  });
  router.post("/inbound", async (req, res) => {
    // Queued, not yet reported: the gateway learns of it through its callback, as from a real engine.
    res.status(202).json(await network.inbound(parse(InboundBody, req.body, "body")));
  });
  router.post("/phone-send", async (req, res) => {
    // Queued like an inbound message: the gateway learns of it through its callback.
    res.status(202).json(await network.phoneSend(parse(PhoneSendBody, req.body, "body")));
  });
  // A contact acting in a chat: queued like an inbound message, reported through the callback.
  router.post("/react", async (req, res) => {
    const body = parse(ReactBody, req.body, "body");
    res.status(202).json(await network.act(body, { type: "message.reaction", emoji: body.emoji }));
  });
  router.post("/edit", async (req, res) => {
    const body = parse(ContactEditBody, req.body, "body");
    res.status(202).json(await network.act(body, { type: "message.edited", body: body.body }));
  });
  router.post("/revoke", async (req, res) => {
    res.status(202).json(await network.act(parse(ContactRevokeBody, req.body, "body"), { type: "message.revoked" }));
  });
  router.post("/vote", async (req, res) => {
    const body = parse(VoteBody, req.body, "body");
    res.status(202).json(await network.act(body, { type: "message.poll_vote", options: body.options }));
  });
  router.post("/typing", async (req, res) => {
    res.status(202).json(await network.typing(parse(TypingBody, req.body, "body")));
  });
  router.post("/logout", async (req, res) => {
    res.status(200).json(await network.logout(parse(LogoutBody, req.body, "body").phone));
  });
  router.post("/restrict", async (req, res) => {
    res.status(200).json(await network.restrict(parse(RestrictBody, req.body, "body")));
  });
  router.get("/received", async (req: Request, res: Response) => {
    const { to } = parse(ReceivedQuery, req.query, "query");
    res.status(200).json({ data: await network.received(to) });
  });
  router.post("/groups", async (req, res) => {
    res.status(201).json(await engine.groups.networkCreate(parse(GroupBody, req.body, "body")));
  });
  router.post("/groups/:group/members", async (req, res) => {
    res.status(200).json(await engine.groups.networkMembers(req.params.group, parse(GroupMembersBody, req.body, "body")));
  });
  router.patch("/groups/:group", async (req, res) => {
    res.status(200).json(await engine.groups.networkChange(req.params.group, parse(GroupChangeBody, req.body, "body")));
  });
  router.get("/faults", async (_req, res) => {
    res.status(200).json(await network.faults());
  });
  router.post("/faults", async (req, res) => {
    res.status(200).json(await network.setFaults(parse(FaultsBody, req.body, "body")));
  });
  return router;
}

function parse<T extends z.ZodTypeAny>(schema: T, value: unknown, where: string): z.infer<T> {
  const unstorable = unstorableStrings(value, where);
  if (unstorable.length) throw ApiError.validation(unstorable);
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw ApiError.validation(zodFieldErrors(result.error, where));
  return result.data;
}
