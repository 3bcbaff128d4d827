// The part of the library's socket the engine uses, and how sockets are made. Production makes
// them with the library's makeWASocket; outside production BAILEYS_SOCKET_MODULE may name a module
// whose `createSocket` makes them instead (the tests' stand-in, which plays the network and the
// phone with the library's event shapes and records the calls made on it). Production refuses
// that setting (server/config.ts), so a deployed gateway always talks to the real network.
import { pathToFileURL } from "node:url";
import makeWASocket, { Browsers, makeCacheableSignalKeyStore, type AnyMessageContent, type AuthenticationState, type GroupMetadata, type BaileysEventMap, type MiscMessageGenerationOptions, type WAMessage, type WAMessageKey, type proto } from "@whiskeysockets/baileys";
import type { Logger } from "../../logger.js";

export interface EngineSocket {
  ev: { on<E extends keyof BaileysEventMap>(event: E, listener: (arg: BaileysEventMap[E]) => void): void };
  readonly user?: { id: string; lid?: string | undefined } | undefined;
  sendMessage(jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions): Promise<WAMessage | undefined>;
  onWhatsApp(...phones: string[]): Promise<{ jid: string; exists: boolean }[] | undefined>;
  groupMetadata(jid: string): Promise<GroupMetadata>;
  logout(msg?: string): Promise<void>;
  end(error: Error | undefined): void | Promise<void>;
}

export interface SocketOptions {
  /** Our connection id (the stand-in keys its phones by it; the library ignores it). */
  connectionId: string;
  auth: AuthenticationState;
  getMessage(key: WAMessageKey): Promise<proto.IMessage | undefined>;
  /** A group's metadata for the send path, from our cache (the library asks the network without it). */
  cachedGroupMetadata(jid: string): Promise<GroupMetadata | undefined>;
  logger: Logger;
}

export type SocketFactory = (options: SocketOptions) => EngineSocket | Promise<EngineSocket>;

export const librarySocketFactory: SocketFactory = (options) => {
  // The library logs protocol nodes at debug and below (keys, message content): never let those through.
  const logger = options.logger.child({ component: "baileys" }, { level: options.logger.levelVal > 40 ? options.logger.level : "warn" });
  return makeWASocket({
    auth: { creds: options.auth.creds, keys: makeCacheableSignalKeyStore(options.auth.keys, logger as never) },
    getMessage: options.getMessage,
    cachedGroupMetadata: options.cachedGroupMetadata,
    logger: logger as never,
    browser: Browsers.ubuntu("svc-gateway"),
    // A gateway is not a person at a screen: the phone keeps getting its notifications.
    markOnlineOnConnect: false,
    syncFullHistory: false,
  }) as unknown as EngineSocket;
};

/** The factory for this process: the library's, or the module named by BAILEYS_SOCKET_MODULE. */
export async function loadSocketFactory(module: string | undefined): Promise<SocketFactory> {
  if (!module) return librarySocketFactory;
  const loaded = (await import(pathToFileURL(module).href)) as { createSocket?: SocketFactory };
  if (typeof loaded.createSocket !== "function") throw new Error(`BAILEYS_SOCKET_MODULE ${module} exports no createSocket`);
  return loaded.createSocket;
}
