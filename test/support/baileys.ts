// Driving the Baileys engine of the test gateway: connections created on it, paired by the
// stand-in phone (test/support/baileys-stand-in.ts) the way a person pairs a real one.
import { createCipheriv, createHash, createHmac, randomBytes } from "node:crypto";
import { proto } from "@whiskeysockets/baileys";
import type { Connection } from "../../contract/index.js";
import { expectOk } from "../../sdk/src/index.js";
import type { BaileysEngine } from "../../server/engines/baileys/engine.js";
import { testEnv } from "../setup.js";
import type { Client } from "./actors.js";
import { pollSecret, standIn, type StandInSocket } from "./baileys-stand-in.js";
import { qrOf, waitForConnection } from "./sandbox.js";
import { waitFor } from "./wait.js";

export function baileysEngine(): BaileysEngine {
  return testEnv().gateway.ctx.engines.get("baileys") as BaileysEngine;
}

/** A LID user part no other test uses. */
/**
 * Sets aside the Baileys connections that earlier test files of this worker left on its database
 * (deleted, their leases dropped), so that child processes share out only `keep`: the fair share
 * counts every connection that wants a socket. Call once the test gateway's engine has closed.
 */
export async function onlyTheseBaileysConnections(keep: string[]): Promise<void> {
  const db = testEnv().gateway.ctx.db;
  await db.query(`UPDATE connections SET deleted_at = now() WHERE transport = 'baileys' AND deleted_at IS NULL AND NOT (id = ANY($1))`, [keep]);
  await db.query(`DELETE FROM baileys_leases WHERE NOT (connection_id = ANY($1))`, [keep]);
}

export function uniqueLid(): string {
  return String(100_000_000_000 + (randomBytes(5).readUIntBE(0, 5) % 899_999_999_999));
}

/** Creates a connection on the Baileys engine (TRANSPORT=baileys for the one create). */
export async function createBaileysConnection(client: Client, slug: string): Promise<Connection> {
  const config = testEnv().gateway.ctx.config;
  const before = config.transport;
  config.transport = "baileys";
  try {
    return await expectOk(client.connections.create({ body: { slug } }));
  } finally {
    config.transport = before;
  }
}

/** The live stand-in socket of a connection, once the engine has opened one. */
export async function liveSocket(connectionId: string, predicate: (s: StandInSocket) => boolean = () => true, timeoutMs = 10_000): Promise<StandInSocket> {
  const socket = await waitFor(async () => standIn.live(connectionId), (s) => s !== undefined && predicate(s), timeoutMs);
  return socket!;
}

/** Pairs a Baileys connection: pair, redeem the QR, the stand-in phone scans; returns once connected. */
export async function pairBaileys(client: Client, slug: string, phone: string, lid = uniqueLid()): Promise<{ connection: Connection; lid: string }> {
  const created = await createBaileysConnection(client, slug);
  const grant = await expectOk(client.connections.pair({ params: { connection: slug } }));
  const qr = qrOf(await expectOk(client.connections.qr({ params: { connection: slug, grantId: grant.grant_id } })));
  // The engine opens the socket once the pairing starts: seconds on a loaded machine (10 s, then
  // 30 s ran out on the embedded database in CI, beside the other passes).
  const socket = await liveSocket(created.id, () => true, 60_000);
  if (!socket.qrs.includes(qr.payload)) throw new Error(`redeemed payload ${qr.payload} is not one of the socket's QRs`);
  socket.scan(phone, lid);
  const connection = await waitForConnection(client, slug, (c) => c.state === "connected" && c.phone === phone);
  return { connection, lid };
}

/**
 * A contact's vote on the poll `pollId` as their phone encrypts it: AES-GCM under a key derived
 * from the poll's secret (the library's decryptPollVote, reversed); options by name.
 */
export function encryptedVote(pollId: string, creatorJid: string, voterJid: string, options: string[]): { encPayload: Buffer; encIv: Buffer } {
  const sign = Buffer.concat([Buffer.from(pollId), Buffer.from(creatorJid), Buffer.from(voterJid), Buffer.from("Poll Vote"), Buffer.from([1])]);
  const key0 = createHmac("sha256", Buffer.alloc(32)).update(pollSecret(pollId)).digest();
  const key = createHmac("sha256", key0).update(sign).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(`${pollId}\u0000${voterJid}`));
  const plain = proto.Message.PollVoteMessage.encode({ selectedOptions: options.map((o) => createHash("sha256").update(o).digest()) }).finish();
  return { encPayload: Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]), encIv: iv };
}
