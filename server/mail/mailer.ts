// Outgoing mail (sign-in codes, invitations). With SMTP_URL it goes through nodemailer's SMTP
// transport; without, to the development outbox: the log and an .eml file per message, so a
// fresh install can sign in with no mail server.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import nodemailer, { type Transporter } from "nodemailer";
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

export function createMailer(options: { smtpUrl?: string | undefined; from: string; outboxDir: string; logger: Logger }): Mailer {
  if (options.smtpUrl) {
    const transport: Transporter = nodemailer.createTransport(options.smtpUrl);
    return {
      async send(mail) {
        await transport.sendMail({ from: options.from, ...mail });
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  let seq = 0;
  return {
    async send(mail) {
      const info = await transport.sendMail({ from: options.from, ...mail });
      await mkdir(options.outboxDir, { recursive: true });
      const file = join(options.outboxDir, `${Date.now()}-${++seq}.eml`);
      await writeFile(file, info.message as Buffer);
      // The development outbox is the documented way to read mail without SMTP: print it whole.
      options.logger.info({ outbox: file, mail_to: mail.to, subject: mail.subject }, `development outbox:\n${mail.text}`);
    },
    close: () => transport.close(),
  };
}
