// Outgoing mail (sign-in codes, invitations). With SMTP_URL it goes through nodemailer's SMTP
// transport; without, to the development outbox: the log and an .eml file per message, so a
// fresh install can sign in with no mail server.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type nodemailer from "nodemailer";
import type { Transporter } from "nodemailer";
import { ensurePrivateDir } from "../data-dir.js";
import type { Logger } from "../logger.js";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

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
  /** Production with the log transport (MAIL_TRANSPORT=log): said at every start. */
  production?: boolean;
}): Mailer {
  const smtpUrl = options.smtpUrl;
  if (smtpUrl) {
    const transport = lazyTransport((mailer) => mailer.createTransport(smtpUrl));
    return {
      async send(mail) {
        await (await transport.get()).sendMail({ from: options.from, ...mail });
      },
      close: () => transport.close(),
    };
  }
  if (options.production) {
    options.logger.warn(
      { mail_transport: "log", outbox: options.outboxDir },
      "MAIL_TRANSPORT=log in production: sign-in codes and invitation links are written to this log and the outbox; " +
        "whoever can read them can sign in. Set SMTP_URL to send mail instead.",
    );
  }
  const transport = lazyTransport((mailer) => mailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" }));
  let seq = 0;
  return {
    async send(mail) {
      const info = await (await transport.get()).sendMail({ from: options.from, ...mail });
      // The messages carry sign-in codes and invitation links: the owner's eyes only.
      ensurePrivateDir(options.outboxDir);
      const file = join(options.outboxDir, `${Date.now()}-${++seq}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600, flag: "wx" });
      // The development outbox is the documented way to read mail without SMTP: print it whole.
      options.logger.info({ outbox: file, mail_to: mail.to, subject: mail.subject }, `development outbox:\n${mail.text}`);
    },
    close: () => transport.close(),
  };
}
