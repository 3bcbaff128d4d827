// The part of the library's socket the engine uses, and how sockets are made. Production makes
// them with the library's makeWASocket; outside production BAILEYS_SOCKET_MODULE may name a module
// whose `createSocket` makes them instead (the tests' stand-in, which plays the network and the
// phone with the library's event shapes and records the calls made on it). Production refuses
// that setting (server/config.ts), so a deployed gateway always talks to the real network.
import { pathToFileURL } from "node:url";
import type { Readable } from "node:stream";
import makeWASocket, {
  Browsers,
  downloadMediaMessage,
  fetchLatestBaileysVersion,
  fetchLatestWaWebVersion,
  makeCacheableSignalKeyStore,
  type AnyMessageContent,
  type AuthenticationState,
  type BinaryNode,
  type BaileysEventMap,
  type CacheStore,
  type GroupMetadata,
  type MiscMessageGenerationOptions,
  type ParticipantAction,
  type WAMessage,
  type WAMessageKey,
  type WAPresence,
  type WAVersion,
  type proto,
} from "@whiskeysockets/baileys";
import type { Logger } from "../../logger.js";
import { isIgnoredJid } from "./translate.js";
import { proxyAgent } from "./proxy.js";

export interface EngineSocket {
  ev: { on<E extends keyof BaileysEventMap>(event: E, listener: (arg: BaileysEventMap[E]) => void): void };
  readonly user?: { id: string; lid?: string | undefined } | undefined;
  /** The raw stanza stream: the library emits `CB:<tag>,<attr>:<value>` for every node it receives. */
  readonly ws?: { on(event: string, listener: (node: unknown) => void): unknown } | undefined;
  /** The library's LID ↔ phone-number store (v7). */
  readonly signalRepository?: { lidMapping?: { getPNForLID(lid: string): Promise<string | null | undefined> } } | undefined;
  sendMessage(jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions): Promise<WAMessage | undefined>;
  onWhatsApp(...phones: string[]): Promise<{ jid: string; exists: boolean }[] | undefined>;
  groupMetadata(jid: string): Promise<GroupMetadata>;
  // The group calls of the engine's groups (groups.ts), as the library declares them.
  groupFetchAllParticipating(): Promise<{ [jid: string]: GroupMetadata }>;
  groupCreate(subject: string, participants: string[]): Promise<GroupMetadata>;
  groupParticipantsUpdate(jid: string, participants: string[], action: ParticipantAction): Promise<{ status: string; jid: string | undefined; content: BinaryNode }[]>;
  groupUpdateSubject(jid: string, subject: string): Promise<void>;
  groupUpdateDescription(jid: string, description?: string): Promise<void>;
  groupSettingUpdate(jid: string, setting: "announcement" | "not_announcement" | "locked" | "unlocked"): Promise<void>;
  groupLeave(id: string): Promise<void>;
  groupInviteCode(jid: string): Promise<string | undefined>;
  groupRevokeInvite(jid: string): Promise<string | undefined>;
  /** Pairing by code: the code for the phone number (digits only) to type under "Link with phone number". */
  requestPairingCode(phoneNumber: string): Promise<string>;
  /**
   * Asks the network for the account's restriction ("reachout timelock"); the answer comes as a
   * `connection.update` with `reachoutTimeLock`, as does the network's notice when it changes.
   */
  fetchAccountReachoutTimelock(): Promise<unknown>;
  logout(msg?: string): Promise<void>;
  end(error: Error | undefined): void | Promise<void>;
  readMessages(keys: WAMessageKey[]): Promise<void>;
  sendPresenceUpdate(type: WAPresence, toJid?: string): Promise<void>;
  /** A received message's media, downloaded and decrypted with its media key (the library's downloadMediaMessage), streamed. */
  downloadMedia(message: WAMessage): Promise<Readable>;
}

export interface SocketOptions {
  /** Our connection id (the stand-in keys its phones by it; the library ignores it). */
  connectionId: string;
  auth: AuthenticationState;
  getMessage(key: WAMessageKey): Promise<proto.IMessage | undefined>;
  logger: Logger;
  /** A group's metadata as last seen (the library asks before each group send; undefined: it queries the network). */
  cachedGroupMetadata(jid: string): Promise<GroupMetadata | undefined>;
  /** The count of retry requests per message, kept by the session across its sockets. */
  msgRetryCounterCache?: CacheStore | undefined;
  /** The client version to present (fetched at start and on a refusal, or BAILEYS_WA_VERSION). */
  version?: WAVersion | undefined;
  /** The proxy the socket goes through (the connection's, else BAILEYS_PROXY_URL); none when absent. */
  proxyUrl?: string | undefined;
  /** Where the socket connects instead of the network (the tests' loopback stand-in server); never set in production. */
  webSocketUrl?: string | undefined;
}

/** Where the network's current client version comes from: the network's own web client, else the library's published one. */
export type VersionSource = () => Promise<WAVersion>;

export const libraryVersionSource: VersionSource = async () => {
  const web = await fetchLatestWaWebVersion({ signal: AbortSignal.timeout(10_000) });
  if (web.isLatest) return web.version;
  const published = await fetchLatestBaileysVersion({ signal: AbortSignal.timeout(10_000) });
  if (published.isLatest) return published.version;
  throw new Error("the network's client version could not be fetched");
};

export type SocketFactory = (options: SocketOptions) => EngineSocket | Promise<EngineSocket>;

export const librarySocketFactory: SocketFactory = async (options) => {
  // The library logs protocol nodes at debug and below (keys, message content): never let those through.
  const logger = options.logger.child({ component: "baileys" }, { level: options.logger.levelVal > 40 ? options.logger.level : "warn" });
  const agent = options.proxyUrl ? await proxyAgent(options.proxyUrl) : undefined;
  const socket = makeWASocket({
    auth: { creds: options.auth.creds, keys: makeCacheableSignalKeyStore(options.auth.keys, logger as never) },
    ...(agent && { agent, fetchAgent: agent }),
    ...(options.webSocketUrl && { waWebSocketUrl: options.webSocketUrl }),
    getMessage: options.getMessage,
    cachedGroupMetadata: options.cachedGroupMetadata,
    shouldIgnoreJid: isIgnoredJid,
    ...(options.msgRetryCounterCache && { msgRetryCounterCache: options.msgRetryCounterCache }),
    logger: logger as never,
    browser: Browsers.ubuntu("svc-gateway"),
    // A gateway is not a person at a screen: the phone keeps getting its notifications.
    markOnlineOnConnect: false,
    syncFullHistory: false,
    ...(options.version && { version: options.version }),
  });
  // An expired media URL is asked again of the sender's phone (reuploadRequest).
  const downloadMedia = (message: WAMessage) =>
    downloadMediaMessage(message, "stream", {}, { logger: logger as never, reuploadRequest: socket.updateMediaMessage }) as Promise<Readable>;
  return Object.assign(socket, { downloadMedia }) as unknown as EngineSocket;
};

/**
 * The factory and version source for this process: the library's, or the module named by
 * BAILEYS_SOCKET_MODULE (its `createSocket`, and its `fetchVersion` when it has one: the network
 * it plays decides which versions it accepts).
 */
export async function loadSocketFactory(module: string | undefined): Promise<{ factory: SocketFactory; fetchVersion: VersionSource }> {
  if (!module) return { factory: librarySocketFactory, fetchVersion: libraryVersionSource };
  const loaded = (await import(pathToFileURL(module).href)) as { createSocket?: SocketFactory; fetchVersion?: VersionSource };
  if (typeof loaded.createSocket !== "function") throw new Error(`BAILEYS_SOCKET_MODULE ${module} exports no createSocket`);
  return { factory: loaded.createSocket, fetchVersion: loaded.fetchVersion ?? libraryVersionSource };
}

/** BAILEYS_WA_VERSION ("2.3000.1043857760") as the library's version triple. */
export function parseVersion(pinned: string): WAVersion {
  const parts = pinned.split(".").map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`not a client version (major.minor.revision): ${pinned}`);
  return parts as WAVersion;
}
