// The part of the library's socket the engine uses, and how sockets are made. Production makes
// them with the library's makeWASocket; outside production BAILEYS_SOCKET_MODULE may name a module
// whose `createSocket` makes them instead (the tests' stand-in, which plays the network and the
// phone with the library's event shapes and records the calls made on it). Production refuses
// that setting (server/config.ts), so a deployed gateway always talks to the real network.
import { pathToFileURL } from "node:url";
import makeWASocket, { Browsers, makeCacheableSignalKeyStore, type AnyMessageContent, type AuthenticationState, type BaileysEventMap, type MiscMessageGenerationOptions, type WAMessage, type WAMessageKey, type proto } from "@whiskeysockets/baileys";
import type { Logger } from "../../logger.js";
import { proxyAgent } from "./proxy.js";

export interface EngineSocket {
  ev: { on<E extends keyof BaileysEventMap>(event: E, listener: (arg: BaileysEventMap[E]) => void): void };
  readonly user?: { id: string; lid?: string | undefined } | undefined;
  sendMessage(jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions): Promise<WAMessage | undefined>;
  onWhatsApp(...phones: string[]): Promise<{ jid: string; exists: boolean }[] | undefined>;
  /** Pairing by code: the code for the phone number (digits only) to type under "Link with phone number". */
  requestPairingCode(phoneNumber: string): Promise<string>;
  logout(msg?: string): Promise<void>;
  end(error: Error | undefined): void | Promise<void>;
}

export interface SocketOptions {
  /** Our connection id (the stand-in keys its phones by it; the library ignores it). */
  connectionId: string;
  auth: AuthenticationState;
  getMessage(key: WAMessageKey): Promise<proto.IMessage | undefined>;
  logger: Logger;
  /** The proxy the socket goes through (the connection's, else BAILEYS_PROXY_URL); none when absent. */
  proxyUrl?: string | undefined;
  /** Where the socket connects instead of the network (the tests' loopback stand-in server); never set in production. */
  webSocketUrl?: string | undefined;
}

export type SocketFactory = (options: SocketOptions) => EngineSocket | Promise<EngineSocket>;

export const librarySocketFactory: SocketFactory = (options) => {
  // The library logs protocol nodes at debug and below (keys, message content): never let those through.
  const logger = options.logger.child({ component: "baileys" }, { level: options.logger.levelVal > 40 ? options.logger.level : "warn" });
  const agent = options.proxyUrl ? proxyAgent(options.proxyUrl) : undefined;
  return makeWASocket({
    auth: { creds: options.auth.creds, keys: makeCacheableSignalKeyStore(options.auth.keys, logger as never) },
    ...(agent && { agent, fetchAgent: agent }),
    ...(options.webSocketUrl && { waWebSocketUrl: options.webSocketUrl }),
    getMessage: options.getMessage,
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
