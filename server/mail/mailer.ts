// Outgoing mail (sign-in codes, invitations). With SMTP_URL it goes through nodemailer's SMTP
// transport; without, to the development outbox: the log and an .eml file per message, so a
// fresh install can sign in with no mail server.
//
// A mail that cannot be sent is tried again (MAIL_RETRY_DELAYS_MS: for about six minutes, inside
// a sign-in code's ten), counted in /metrics, and marks mail as failing until one goes out, which
// /readyz and `svc-gateway health` report. Retries live in this process only: a mail carries a
// sign-in code or an invitation link, which are never stored in plain text.
import { writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import type nodemailer from "nodemailer";
import type { Transporter } from "nodemailer";
import { ensurePrivateDir } from "../data-dir.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../ops/metrics.js";

export type MailKind = "sign_in" | "invitation";

export interface Mail {
  kind: MailKind;
  to: string;
  subject: string;
  text: string;
}

export interface MailStatus {
  /** Set while the latest attempt (or the start-up check of SMTP_URL) failed and no mail has gone out since. */
  failingSince: Date | null;
}

export interface Mailer {
  /** Resolves once the mail is sent; rejects once every attempt has failed. */
  send(mail: Mail): Promise<void>;
  status(): MailStatus;
  /** Start-up: whether SMTP_URL's server accepts a connection (one line in the log when not). */
  checkReachable(): Promise<void>;
  close(): void;
}

/** Waits before each retry of a failed mail: 2 s, 10 s, 1 min, 5 min (five attempts in all). */
export const MAIL_RETRY_DELAYS_MS = [2_000, 10_000, 60_000, 300_000];
const REACHABILITY_TIMEOUT_MS = 5_000;

/**
 * nodemailer is loaded, and the transport made, on the first mail rather than at start: a process
 * may send none (sign-in codes and invitations are rare), and the module is a sizeable part of an
 * idle gateway's memory (docs/performance.md, Export).
 */
function lazyTransport(make: (mailer: typeof nodemailer) => Transporter): { get(): Promise<Transporter>; close(): void } {
  let transport: Promise<Transporter> | undefined;
  return {
    get() {
      transport ??= import("nodemailer").then((m) => make(m.default));
      // A failed load is not cached: the next mail tries again.
      transport.catch(() => (transport = undefined));
      return transport;
    },
    close() {
      void transport?.then((t) => t.close(), () => undefined);
    },
  };
}

export function createMailer(options: {
  smtpUrl?: string | undefined;
  from: string;
  outboxDir: string;
  logger: Logger;
  metrics: Metrics;
  /** Production with the log transport (MAIL_TRANSPORT=log): said at every start. */
  production?: boolean;
  retryDelaysMs?: number[];
}): Mailer {
  const { logger, metrics } = options;
  const smtpUrl = options.smtpUrl;
  let deliver: (mail: Mail) => Promise<void>;
  let transport: { close(): void };
  if (smtpUrl) {
    const smtp = lazyTransport((mailer) => mailer.createTransport(smtpUrl));
    transport = smtp;
    deliver = async (mail) => {
      await (await smtp.get()).sendMail({ from: options.from, to: mail.to, subject: mail.subject, text: mail.text });
    };
  } else {
    if (options.production) {
      logger.warn(
        { mail_transport: "log", outbox: options.outboxDir },
        "MAIL_TRANSPORT=log in production: sign-in codes and invitation links are written to this log and the outbox; " +
          "whoever can read them can sign in. Set SMTP_URL to send mail instead.",
      );
    }
    const stream = lazyTransport((mailer) => mailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" }));
    transport = stream;
    let seq = 0;
    deliver = async (mail) => {
      const info = await (await stream.get()).sendMail({ from: options.from, to: mail.to, subject: mail.subject, text: mail.text });
      // The messages carry sign-in codes and invitation links: the owner's eyes only.
      ensurePrivateDir(options.outboxDir);
      const file = join(options.outboxDir, `${Date.now()}-${++seq}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600, flag: "wx" });
      // The development outbox is the documented way to read mail without SMTP: print it whole.
      logger.info({ outbox: file, mail_to: mail.to, subject: mail.subject }, `development outbox:\n${mail.text}`);
    };
  }

  const delays = options.retryDelaysMs ?? MAIL_RETRY_DELAYS_MS;
  let failingSince: Date | null = null;
  let closed = false;
  /** Retries waiting for their time; close() ends them (the mail is given up, as at a restart). */
  const waiting = new Map<NodeJS.Timeout, () => void>();
  const failed = () => (failingSince ??= new Date());
  const pause = (ms: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(timer);
        resolve(!closed);
      }, ms);
      timer.unref();
      waiting.set(timer, () => resolve(false));
    });

  return {
    async send(mail) {
      for (let attempt = 0; ; attempt++) {
        try {
          await deliver(mail);
          metrics.mailSent.inc({ kind: mail.kind });
          failingSince = null;
          return;
        } catch (err) {
          failed();
          const delay = delays[attempt];
          metrics.mailFailures.inc({ kind: mail.kind, outcome: delay === undefined ? "given_up" : "retrying" });
          // The address is the recipient's, not a secret; the subject of a sign-in mail holds its code.
          if (delay === undefined || closed) throw err;
          logger.warn({ err, kind: mail.kind, attempt: attempt + 1, retry_in_ms: delay }, `${mail.kind} mail failed; trying again in ${delay / 1000} s`);
          if (!(await pause(delay))) throw err;
        }
      }
    },
    status: () => ({ failingSince }),
    async checkReachable() {
      if (!smtpUrl) return;
      const target = smtpEndpoint(smtpUrl);
      if (!target) return;
      const problem = await tcpReachable(target.host, target.port, REACHABILITY_TIMEOUT_MS);
      if (!problem) return;
      failed();
      // Host and port only: SMTP_URL may carry a password.
      logger.warn(
        { smtp: `${target.host}:${target.port}`, reason: problem },
        `SMTP_URL unreachable: ${target.host}:${target.port} does not accept connections (${problem}); sign-in codes and invitations cannot be sent until it does (each mail is retried for about 6 minutes)`,
      );
    },
    close() {
      closed = true;
      for (const [timer, end] of waiting) {
        clearTimeout(timer);
        end();
      }
      waiting.clear();
      transport.close();
    },
  };
}

/** Host and port of an smtp:/smtps: URL, with nodemailer's default ports (587, 465 for smtps). */
function smtpEndpoint(url: string): { host: string; port: number } | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") return null;
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  return { host, port: parsed.port ? Number(parsed.port) : parsed.protocol === "smtps:" ? 465 : 587 };
}

/** null when a TCP connection opens within `timeoutMs`; else why not. */
function tcpReachable(host: string, port: number, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (problem: string | null) => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs / 1000} s`));
    socket.once("connect", () => done(null));
    socket.once("error", (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}
