// A stand-in for the Baileys library's socket: it emits the library's event shapes (connection
// updates with rotating QRs, creds updates, message upserts, status and receipt updates, closes
// with the library's disconnect codes) and records every call made on it. The gateway loads it
// through BAILEYS_SOCKET_MODULE (refused in production). In the test process, tests drive its
// sockets directly (`standIn`); in a child gateway it plays a phone that stays linked, writes
// what happened to the file named by STAND_IN_LOG (JSON lines) so the test can read it, and scans
// the QR codes the test names in the file STAND_IN_SCANS (JSON lines `{"payload","phone","lid"}`),
// as a person holding the phone would.
import { EventEmitter } from "node:events";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { AnyMessageContent, GroupMetadata, MiscMessageGenerationOptions, WAMessage, proto } from "@whiskeysockets/baileys";
import type { EngineSocket, SocketFactory, SocketOptions } from "../../server/engines/baileys/socket.js";

export interface Call {
  method: "sendMessage" | "onWhatsApp" | "groupMetadata" | "logout" | "end";
  args: unknown[];
}

interface World {
  sockets: StandInSocket[];
  /** Numbers (JIDs) the network says are not on it. */
  offNetwork: Set<string>;
  /** onWhatsApp never answers (a slow network). */
  hangChecks: boolean;
  qrIntervalMs: number;
  /** Groups on the network, by JID, in the library's shape. */
  groups: Map<string, GroupMetadata>;
}

const holder = globalThis as unknown as { __baileysStandIn?: World };
const world: World = (holder.__baileysStandIn ??= { sockets: [], offNetwork: new Set(), hangChecks: false, qrIntervalMs: 1_000, groups: new Map() });
world.groups ??= new Map();

function log(entry: Record<string, unknown>): void {
  const file = process.env.STAND_IN_LOG;
  if (file) appendFileSync(file, JSON.stringify({ pid: process.pid, at: Date.now(), ...entry }) + "\n");
}

/** An error as the library closes a socket with: a Boom whose output carries the code. */
export function disconnect(statusCode: number): Error {
  return Object.assign(new Error(`closed with ${statusCode}`), { output: { statusCode } });
}

export class StandInSocket implements EngineSocket {
  readonly emitter = new EventEmitter();
  readonly ev: EngineSocket["ev"] = { on: (event, listener) => void this.emitter.on(event, listener as (arg: unknown) => void) };
  readonly calls: Call[] = [];
  readonly qrs: string[] = [];
  user: { id: string; lid?: string } | undefined;
  ended = false;
  private qrTimer: NodeJS.Timeout | undefined;

  constructor(readonly options: SocketOptions) {
    world.sockets.push(this);
    log({ event: "open", connection: options.connectionId });
    setImmediate(() => this.boot());
  }

  get connectionId(): string {
    return this.options.connectionId;
  }

  /** Linked credentials open at once; fresh ones show QR codes, a new one every qrIntervalMs. */
  private boot(): void {
    if (this.ended) return;
    const me = this.options.auth.creds.me;
    if (me) {
      this.user = { id: me.id, ...(me.lid && { lid: me.lid }) };
      this.emit("connection.update", { connection: "open" });
      return;
    }
    const show = () => {
      if (this.ended) return;
      const qr = `standin-qr:${this.connectionId}:${this.qrs.length + 1}`;
      this.qrs.push(qr);
      this.emit("connection.update", { qr });
      this.qrTimer = setTimeout(show, world.qrIntervalMs);
    };
    show();
    this.watchScans();
  }

  /** In a child gateway: scan a QR of this socket once the test has written it to STAND_IN_SCANS. */
  private watchScans(): void {
    const file = process.env.STAND_IN_SCANS;
    if (!file) return;
    const timer = setInterval(() => {
      if (this.ended) return void clearInterval(timer);
      if (!existsSync(file)) return;
      const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
      const scan = lines.map((l) => JSON.parse(l) as { payload: string; phone: string; lid: string }).find((l) => this.qrs.includes(l.payload));
      if (!scan) return;
      clearInterval(timer);
      this.scan(scan.phone, scan.lid);
    }, 100);
    timer.unref();
  }

  emit(event: string, arg: unknown): void {
    this.emitter.emit(event, arg);
  }

  /** The phone scans the QR: new credentials, then the library's restart-required close. */
  scan(phone: string, lid: string): void {
    clearTimeout(this.qrTimer);
    const digits = phone.replace(/\D/g, "");
    this.emit("creds.update", { me: { id: `${digits}:7@s.whatsapp.net`, lid: `${lid}:7@lid` }, registered: true });
    this.close(515);
  }

  /** The socket closes on the network side with the library's code (401 logged out, 428 lost…). */
  close(code: number): void {
    clearTimeout(this.qrTimer);
    this.ended = true;
    log({ event: "closed", connection: this.connectionId, code });
    this.emit("connection.update", { connection: "close", lastDisconnect: { error: disconnect(code), date: new Date() } });
  }

  async sendMessage(jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions): Promise<WAMessage | undefined> {
    this.calls.push({ method: "sendMessage", args: [jid, content, options] });
    // As the library does: a group send needs the participants, from the cache it was given or the network.
    if (jid.endsWith("@g.us") && !(await this.options.cachedGroupMetadata(jid))) await this.groupMetadata(jid);
    const id = options?.messageId ?? `STANDIN${Math.random().toString(16).slice(2)}`;
    log({ event: "send", connection: this.connectionId, id, jid });
    // Killed between the socket write and anything the gateway records after it.
    if (process.env.STAND_IN_KILL_ON_SEND === "1") process.kill(process.pid, "SIGKILL");
    return { key: { remoteJid: jid, fromMe: true, id }, message: messageOf(content), messageTimestamp: Math.floor(Date.now() / 1000), status: 1 };
  }

  async onWhatsApp(...jids: string[]): Promise<{ jid: string; exists: boolean }[] | undefined> {
    this.calls.push({ method: "onWhatsApp", args: jids });
    if (world.hangChecks) return new Promise(() => undefined);
    return jids.map((jid) => ({ jid, exists: !world.offNetwork.has(jid) }));
  }

  async groupMetadata(jid: string): Promise<GroupMetadata> {
    this.calls.push({ method: "groupMetadata", args: [jid] });
    const group = world.groups.get(jid);
    if (!group) throw Object.assign(new Error("item-not-found"), { output: { statusCode: 404 } });
    return structuredClone(group);
  }

  async logout(): Promise<void> {
    this.calls.push({ method: "logout", args: [] });
    this.close(401);
  }

  end(error: Error | undefined): void {
    this.calls.push({ method: "end", args: [error] });
    if (this.ended) return;
    log({ event: "end", connection: this.connectionId });
    this.close(428);
  }
}

function messageOf(content: AnyMessageContent): proto.IMessage {
  const c = content as Record<string, unknown>;
  if (typeof c.text === "string") return { conversation: c.text };
  if (c.location) return { locationMessage: c.location as proto.Message.ILocationMessage };
  if (c.image) return { imageMessage: { mimetype: c.mimetype as string, caption: (c.caption as string | undefined) ?? null } };
  if (c.video) return { videoMessage: { mimetype: c.mimetype as string } };
  if (c.audio) return { audioMessage: { mimetype: c.mimetype as string } };
  return { documentMessage: { mimetype: c.mimetype as string, fileName: c.fileName as string } };
}

export const createSocket: SocketFactory = (options) => new StandInSocket(options);

/** The test process's view of the stand-in network. */
export const standIn = {
  world,
  socketsOf(connectionId: string): StandInSocket[] {
    return world.sockets.filter((s) => s.connectionId === connectionId);
  },
  /** The newest socket of a connection that is still up. */
  live(connectionId: string): StandInSocket | undefined {
    return this.socketsOf(connectionId).filter((s) => !s.ended).at(-1);
  },
};
