// A real SMTP server on loopback that keeps what it receives, so tests read mail the way a user
// would: sign-in codes and invitation links arrive by SMTP through nodemailer.
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";

export interface CapturedMail {
  to: string[];
  raw: string;
}

export class Mailbox {
  readonly mails: CapturedMail[] = [];
  private waiters: (() => void)[] = [];
  private server: SMTPServer;

  constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          this.mails.push({ to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), raw: Buffer.concat(chunks).toString("utf8") });
          for (const w of this.waiters.splice(0)) w();
          callback();
        });
      },
    });
  }

  /** Listens on `port` (default: any free one); answers the SMTP_URL to give a gateway. */
  async start(port = 0): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
    const bound = (this.server.server.address() as AddressInfo).port;
    return `smtp://127.0.0.1:${bound}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /**
   * Waits for a mail to `to` matching `pattern` among those after the first `since`; returns the
   * match. The default allows a loaded run's embedded database (a sign-in code took over 5 s in a
   * CI run on a slow machine); a mail that comes returns at once.
   */
  async waitFor(to: string, pattern: RegExp, since = 0, timeoutMs = 15_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.mails
        .slice(since)
        .reverse()
        .find((m) => m.to.includes(to.toLowerCase()) && pattern.test(unfold(m.raw)));
      if (found) return pattern.exec(unfold(found.raw))!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} matching ${pattern} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, left).unref();
      });
    }
  }

  count(to: string): number {
    return this.mails.filter((m) => m.to.includes(to.toLowerCase())).length;
  }
}

/** Undo quoted-printable soft line breaks and =3D so links and codes read whole. */
function unfold(raw: string): string {
  return raw.replace(/=\r?\n/g, "").replace(/=3D/g, "=");
}
