// A stand-in for the Baileys library's socket: it emits the library's event shapes and orders, as
// read in Baileys 7.0.0-rc14's source (connection updates: `connecting`, then rotating QRs or
// `open`; creds updates; message upserts; one-to-one receipts as `messages.update` status codes
// and group receipts as `message-receipt.update`; `messaging-history.set` with its LID mappings;
// the initial buffered flush, where receipts of a message in the same flush are merged into the
// upserted message; the raw stanza stream `ws` with its `CB:` events; closes with the library's
// disconnect codes: 401, 428, 440 (replaced), 405 (client version refused), 515 (restart)) and
// records every call made on it. The gateway loads it through BAILEYS_SOCKET_MODULE (refused in
// production). In the test process, tests drive its sockets directly (`standIn`); in a child
// gateway it plays a phone that stays linked, writes
// what happened to the file named by STAND_IN_LOG (JSON lines) so the test can read it, and scans
// the QR codes the test names in the file STAND_IN_SCANS (JSON lines `{"payload","phone","lid"}`),
// as a person holding the phone would.
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { Readable } from "node:stream";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { AnyMessageContent, GroupMetadata, ReachoutTimelockState, MiscMessageGenerationOptions, WAMessage, WAMessageKey, WAPresence, WAVersion, proto } from "@whiskeysockets/baileys";
import type { EngineSocket, SocketFactory, SocketOptions, VersionSource } from "../../server/engines/baileys/socket.js";
import type { BinaryNode, ParticipantAction } from "@whiskeysockets/baileys";

/** The library's group calls, recorded like the others. */
type GroupCall =
  | "groupFetchAllParticipating"
  | "groupCreate"
  | "groupParticipantsUpdate"
  | "groupUpdateSubject"
  | "groupUpdateDescription"
  | "groupSettingUpdate"
  | "groupLeave"
  | "groupInviteCode"
  | "groupRevokeInvite";

export interface Call {
  method: "sendMessage" | "onWhatsApp" | "groupMetadata" | "logout" | "end" | "readMessages" | "sendPresenceUpdate" | "downloadMedia" | "requestPairingCode" | "fetchAccountReachoutTimelock" | GroupCall;
  args: unknown[];
}

interface World {
  sockets: StandInSocket[];
  /** Numbers (JIDs) the network says are not on it. */
  offNetwork: Set<string>;
  /** onWhatsApp never answers (a slow network). */
  hangChecks: boolean;
  qrIntervalMs: number;
  /** The client version the network accepts (null: any); a socket presenting another is refused with 405. */
  acceptedVersion: WAVersion | null;
  /** What the network's web client says the current version is (fetchVersion); null: it cannot be reached. */
  publishedVersion: WAVersion | null;
  /** The library's own LID ↔ number store (signalRepository.lidMapping): LID JID → number JID. */
  lidStore: Map<string, string>;
  /** The bytes the network's media server holds, by the network id of their message; absent: gone (410). */
  media: Map<string, Buffer>;
  /** Accounts the network restricted ("reachout timelock"), by the number's digits. */
  restrictions: Map<string, ReachoutTimelockState>;
  /** The network's groups made or played here (groups the tests never made answer as "stand-in group"). */
  groups: Map<string, StandInGroup>;
  /** How a number answers being added to a group, by its JID: its privacy setting (403, with an invitation) or a recent leave (408). */
  groupAdd: Map<string, "403" | "408">;
}

/** A group on the stand-in network: members by JID with their role (the library's `admin` type). */
export interface StandInGroup {
  subject: string;
  desc: string | undefined;
  descId: string | undefined;
  announce: boolean;
  restrict: boolean;
  creation: number;
  owner: string;
  participants: Map<string, "admin" | "superadmin" | null>;
  inviteCode: string;
}

const holder = globalThis as unknown as { __baileysStandIn?: World };
const world: World = (holder.__baileysStandIn ??= {
  sockets: [],
  offNetwork: new Set(),
  hangChecks: false,
  qrIntervalMs: 1_000,
  acceptedVersion: null,
  publishedVersion: [2, 3000, 1],
  lidStore: new Map(),
  media: new Map(),
  groups: new Map(),
  groupAdd: new Map(),
  restrictions: new Map(),
});

/** The version source of the network the stand-in plays (BAILEYS_SOCKET_MODULE's fetchVersion). */
export const fetchVersion: VersionSource = async () => {
  // STAND_IN_VERSION_DELAY_MS: a slow web client, which keeps a starting gateway's engines opening that long.
  const delayMs = Number(process.env.STAND_IN_VERSION_DELAY_MS ?? 0);
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  if (!world.publishedVersion) throw new Error("web client unreachable");
  return world.publishedVersion;
};

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
  /** The raw stanza stream: the library emits `CB:<tag>,<attr>:<value>` for each node received. */
  readonly ws = new EventEmitter();
  readonly signalRepository = { lidMapping: { getPNForLID: async (lid: string) => world.lidStore.get(lid) ?? null } };
  readonly calls: Call[] = [];
  readonly qrs: string[] = [];
  /** Codes asked for by requestPairingCode, oldest first (the library's: 8 characters, no dash). */
  readonly pairingCodes: { code: string; phone: string }[] = [];
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
    this.emit("connection.update", { connection: "connecting", receivedPendingNotifications: false, qr: undefined });
    // The network refuses a stale client version right after the handshake: `<failure reason="405">`.
    const version = this.options.version;
    if (world.acceptedVersion && (!version || version.join(".") !== world.acceptedVersion.join("."))) {
      this.close(405);
      return;
    }
    const me = this.options.auth.creds.me;
    if (me) {
      this.user = { id: me.id, ...(me.lid && { lid: me.lid }) };
      this.emit("connection.update", { connection: "open" });
      return;
    }
    // A fresh socket asks for a QR scan (the library's first connection.update with a qr).
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

  /**
   * After a scan, an account that must confirm with a passkey gets this notification; the library
   * acks it and the socket hangs (no pair-success, no close).
   */
  askPasskey(): void {
    clearTimeout(this.qrTimer);
    const node = { tag: "notification", attrs: { type: "passkey_prologue_request", from: "s.whatsapp.net", id: "1" }, content: [] };
    this.ws.emit("CB:notification,type:passkey_prologue_request", node);
    this.ws.emit("CB:notification", node);
  }

  /**
   * The network restricts this socket's account, or lifts it: its notification
   * (NotificationUserReachoutTimelockUpdate) as the library passes it on, a connection.update with
   * reachoutTimeLock; the account's standing is kept for fetchAccountReachoutTimelock.
   */
  restrict(active: boolean, timeEnforcementEnds?: Date): void {
    const lock: ReachoutTimelockState = active ? { isActive: true, ...(timeEnforcementEnds && { timeEnforcementEnds }), enforcementType: "BIZ_QUALITY" as never } : { isActive: false, enforcementType: "DEFAULT" as never };
    world.restrictions.set(this.digits(), lock);
    this.emit("connection.update", { reachoutTimeLock: lock });
  }

  private digits(): string {
    return (this.user?.id ?? this.options.auth.creds.me?.id ?? "").split(/[:@]/)[0]!;
  }

  async fetchAccountReachoutTimelock(): Promise<ReachoutTimelockState> {
    this.calls.push({ method: "fetchAccountReachoutTimelock", args: [] });
    const lock = world.restrictions.get(this.digits()) ?? { isActive: false, enforcementType: "DEFAULT" as never };
    this.emit("connection.update", { reachoutTimeLock: lock });
    return lock;
  }

  /** A one-to-one receipt as the library reports it: a `messages.update` with the status code (3 delivered, 4 read). */
  receipt(jid: string, id: string, status: 2 | 3 | 4 | 0, errorCode?: number): void {
    // The library adds its restriction text to a 463 ack's parameters (messages-recv.js, handleBadAck).
    const parameters = errorCode === 463 ? ["463", "Your account has been restricted"] : errorCode !== undefined ? [String(errorCode)] : undefined;
    this.emit("messages.update", [{ key: { remoteJid: jid, id, fromMe: true }, update: { status, ...(parameters && { messageStubParameters: parameters }) } }]);
  }

  /** A group receipt: `message-receipt.update`, one per participant. */
  groupReceipt(group: string, id: string, participant: string, kind: "receiptTimestamp" | "readTimestamp", atSeconds = Math.floor(Date.now() / 1000)): void {
    this.emit("message-receipt.update", [{ key: { remoteJid: group, id, fromMe: true }, receipt: { userJid: participant, [kind]: atSeconds } }]);
  }

  /**
   * The library's initial buffered flush after a reconnect: everything that arrived offline comes
   * in one `messages.upsert` (type notify); a receipt for a message of the same flush is merged into
   * that message (its `status`), not emitted; the rest come as `messages.update`. History sync, if
   * any, as `messaging-history.set`.
   */
  offlineFlush(messages: WAMessage[], receipts: { key: proto.IMessageKey; status: number }[] = [], lidPnMappings: { lid: string; pn: string }[] = []): void {
    const byId = new Map(messages.map((m) => [m.key.id, m]));
    const unmerged: { key: proto.IMessageKey; update: { status: number } }[] = [];
    for (const r of receipts) {
      const m = byId.get(r.key.id);
      if (m) m.status = r.status;
      else unmerged.push({ key: r.key, update: { status: r.status } });
    }
    if (lidPnMappings.length) this.emit("messaging-history.set", { chats: [], contacts: [], messages: [], lidPnMappings, isLatest: true, syncType: 0 });
    if (messages.length) this.emit("messages.upsert", { type: "notify", messages });
    if (unmerged.length) this.emit("messages.update", unmerged);
    this.emit("connection.update", { receivedPendingNotifications: true });
  }

  /**
   * The phone of `phone` types a pairing code: it links only if it is the newest code this socket
   * asked for, for that number (the library's flow then goes on as after a scan).
   */
  enterCode(code: string, phone: string, lid: string): boolean {
    const digits = phone.replace(/\D/g, "");
    const plain = code.replace(/-/g, "");
    if (!this.pairingCodes.length || this.pairingCodes.at(-1)!.code !== plain || this.pairingCodes.at(-1)!.phone !== digits) return false;
    this.scan(phone, lid);
    return true;
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
    // As the library's relayMessage: a group send asks the cache first, else queries the network.
    if (jid.endsWith("@g.us")) {
      const cached = await this.options.cachedGroupMetadata(jid);
      if (!cached?.participants) await this.groupMetadata(jid);
    }
    const id = options?.messageId ?? `STANDIN${Math.random().toString(16).slice(2)}`;
    log({ event: "send", connection: this.connectionId, id, jid });
    // Killed between the socket write and anything the gateway records after it.
    if (process.env.STAND_IN_KILL_ON_SEND === "1") process.kill(process.pid, "SIGKILL");
    return { key: { remoteJid: jid, fromMe: true, id }, message: messageOf(content, id), messageTimestamp: Math.floor(Date.now() / 1000), status: 1 };
  }

  async onWhatsApp(...jids: string[]): Promise<{ jid: string; exists: boolean }[] | undefined> {
    this.calls.push({ method: "onWhatsApp", args: jids });
    if (world.hangChecks) return new Promise(() => undefined);
    return jids.map((jid) => ({ jid, exists: !world.offNetwork.has(jid) }));
  }

  /** A group's metadata as the network answers a query (`w:g2` iq), one query recorded per call. */
  async groupMetadata(jid: string): Promise<GroupMetadata> {
    this.calls.push({ method: "groupMetadata", args: [jid] });
    if (world.groups.has(jid)) return metadataOf(jid, this.memberOf(jid));
    return { id: jid, subject: "stand-in group", participants: [{ id: `${jid.split("@")[0]}1@lid`, admin: null }], addressingMode: "lid" } as GroupMetadata;
  }

  /** This socket's number as a group member's JID. */
  private get me(): string {
    return `${(this.user?.id ?? "").split("@")[0]!.split(":")[0]}@s.whatsapp.net`;
  }

  /** The group, if this number is in it; else the network's `forbidden` (403), or `item-not-found` (404) for no such group. */
  private memberOf(jid: string): StandInGroup {
    const group = world.groups.get(jid);
    if (!group) throw iqError(404, "item-not-found");
    if (!group.participants.has(this.me)) throw iqError(403, "forbidden");
    return group;
  }

  /** The group, if this number is one of its admins; else the network's `not-authorized` (401). */
  private adminOf(jid: string): StandInGroup {
    const group = this.memberOf(jid);
    if (!group.participants.get(this.me)) throw iqError(401, "not-authorized");
    return group;
  }

  /** As the library's groupFetchAllParticipating: every group the number is in, also emitted as `groups.update`. */
  async groupFetchAllParticipating(): Promise<{ [jid: string]: GroupMetadata }> {
    this.calls.push({ method: "groupFetchAllParticipating", args: [] });
    const data: { [jid: string]: GroupMetadata } = {};
    for (const [jid, group] of world.groups) if (group.participants.has(this.me)) data[jid] = metadataOf(jid, group);
    this.emit("groups.update", Object.values(data));
    return data;
  }

  /**
   * The network takes the numbers it may add. Its answer lists every number asked for, the ones it
   * did not take with an `error` attribute that the library's parse drops: they read as members.
   */
  async groupCreate(subject: string, participants: string[]): Promise<GroupMetadata> {
    this.calls.push({ method: "groupCreate", args: [subject, participants] });
    const jid = `120363${String(Math.floor(Math.random() * 1e12)).padStart(12, "0")}@g.us`;
    const group: StandInGroup = {
      subject,
      desc: undefined,
      descId: undefined,
      announce: false,
      restrict: false,
      creation: Math.floor(Date.now() / 1000),
      owner: this.me,
      participants: new Map([[this.me, "superadmin"]]),
      inviteCode: inviteCode(),
    };
    for (const p of participants) if (!world.offNetwork.has(p) && !world.groupAdd.has(p)) group.participants.set(p, null);
    world.groups.set(jid, group);
    const answered = metadataOf(jid, group);
    const refused = participants.filter((p) => !group.participants.has(p));
    return { ...answered, participants: [...answered.participants, ...refused.map((id) => ({ id, phoneNumber: undefined, lid: undefined, admin: null }))] };
  }

  /** As the network answers a `w:g2` add/remove/promote/demote: a `participant` node per number, with `error` where it was not done. */
  async groupParticipantsUpdate(jid: string, participants: string[], action: ParticipantAction): Promise<{ status: string; jid: string | undefined; content: BinaryNode }[]> {
    this.calls.push({ method: "groupParticipantsUpdate", args: [jid, participants, action] });
    const group = this.adminOf(jid);
    return participants.map((p) => {
      const role = group.participants.get(p);
      let error: string | undefined;
      let content: BinaryNode[] | undefined;
      if (action === "add") {
        if (role !== undefined) error = "409";
        else if (world.offNetwork.has(p)) error = "404";
        else if (world.groupAdd.get(p) === "403") {
          error = "403";
          content = [{ tag: "add_request", attrs: { code: inviteCode(), expiration: String(Math.floor(Date.now() / 1000) + 3 * 86_400) } }];
        } else if (world.groupAdd.get(p) === "408") error = "408";
        else group.participants.set(p, null);
      } else if (role === undefined) error = "404";
      else if (role === "superadmin") error = "406";
      else if (action === "remove") group.participants.delete(p);
      else group.participants.set(p, action === "promote" ? "admin" : null);
      const node: BinaryNode = { tag: "participant", attrs: { jid: p, ...(error && { error }) }, ...(content && { content }) };
      return { status: error ?? "200", jid: p, content: node };
    });
  }

  async groupUpdateSubject(jid: string, subject: string): Promise<void> {
    this.calls.push({ method: "groupUpdateSubject", args: [jid, subject] });
    const group = this.memberOf(jid);
    if (group.restrict && !group.participants.get(this.me)) throw iqError(401, "not-authorized");
    group.subject = subject;
  }

  async groupUpdateDescription(jid: string, description?: string): Promise<void> {
    this.calls.push({ method: "groupUpdateDescription", args: [jid, description] });
    const group = this.memberOf(jid);
    if (group.restrict && !group.participants.get(this.me)) throw iqError(401, "not-authorized");
    group.desc = description || undefined;
    group.descId = description ? inviteCode() : undefined;
  }

  async groupSettingUpdate(jid: string, setting: "announcement" | "not_announcement" | "locked" | "unlocked"): Promise<void> {
    this.calls.push({ method: "groupSettingUpdate", args: [jid, setting] });
    const group = this.adminOf(jid);
    if (setting === "announcement" || setting === "not_announcement") group.announce = setting === "announcement";
    else group.restrict = setting === "locked";
  }

  async groupLeave(id: string): Promise<void> {
    this.calls.push({ method: "groupLeave", args: [id] });
    this.memberOf(id).participants.delete(this.me);
  }

  async groupInviteCode(jid: string): Promise<string | undefined> {
    this.calls.push({ method: "groupInviteCode", args: [jid] });
    return this.adminOf(jid).inviteCode;
  }

  async groupRevokeInvite(jid: string): Promise<string | undefined> {
    this.calls.push({ method: "groupRevokeInvite", args: [jid] });
    const group = this.adminOf(jid);
    group.inviteCode = inviteCode();
    return group.inviteCode;
  }

  async readMessages(keys: WAMessageKey[]): Promise<void> {
    this.calls.push({ method: "readMessages", args: [keys] });
  }

  async sendPresenceUpdate(type: WAPresence, toJid?: string): Promise<void> {
    this.calls.push({ method: "sendPresenceUpdate", args: [type, toJid] });
  }

  /** The media server's bytes for the message, as the library streams them once decrypted with its media key. */
  async downloadMedia(message: WAMessage): Promise<Readable> {
    this.calls.push({ method: "downloadMedia", args: [message] });
    const bytes = world.media.get(message.key.id ?? "");
    if (!bytes) throw Object.assign(new Error("gone"), { output: { statusCode: 410 } });
    return Readable.from([bytes]);
  }

  /** As the library: the code is bound to the number, and `me` is set (unregistered) until the phone types it. */
  async requestPairingCode(phoneNumber: string): Promise<string> {
    this.calls.push({ method: "requestPairingCode", args: [phoneNumber] });
    const code = [...Array(8)].map(() => "123456789ABCDEFGHJKLMNPQRSTVWXYZ"[Math.floor(Math.random() * 32)]).join("");
    this.pairingCodes.push({ code, phone: phoneNumber });
    this.emit("creds.update", { pairingCode: code, me: { id: `${phoneNumber}@s.whatsapp.net`, name: "~" } });
    return code;
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

/** A refused `w:g2` query as the library throws it (assertNodeErrorFree): a Boom whose `data` is the `<error>` code. */
function iqError(code: number, text: string): Error {
  return Object.assign(new Error(text), { isBoom: true, data: code, output: { statusCode: 500 } });
}

function inviteCode(): string {
  return [...Array(22)].map(() => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[Math.floor(Math.random() * 62)]).join("");
}

/** A group as the library's extractGroupMetadata gives it (a phone-number-addressed group). */
function metadataOf(jid: string, g: StandInGroup): GroupMetadata {
  return {
    id: jid,
    addressingMode: "pn",
    subject: g.subject,
    subjectTime: g.creation,
    size: g.participants.size,
    creation: g.creation,
    owner: g.owner,
    desc: g.desc,
    descId: g.descId,
    restrict: g.restrict,
    announce: g.announce,
    isCommunity: false,
    isCommunityAnnounce: false,
    joinApprovalMode: false,
    memberAddMode: false,
    participants: [...g.participants].map(([id, admin]) => ({ id, phoneNumber: undefined, lid: undefined, admin })),
  } as GroupMetadata;
}

/** The secret the library gives a poll it sends (random there; derived from its id here, so a test can vote). */
export function pollSecret(id: string): Buffer {
  return createHash("sha256").update(`poll-secret:${id}`).digest();
}

function messageOf(content: AnyMessageContent, id: string): proto.IMessage {
  const c = content as Record<string, unknown>;
  if (c.poll) {
    const poll = c.poll as { name: string; values: string[]; selectableCount: number };
    return {
      pollCreationMessageV3: { name: poll.name, options: poll.values.map((optionName) => ({ optionName })), selectableOptionsCount: poll.selectableCount },
      messageContextInfo: { messageSecret: pollSecret(id) },
    };
  }
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
