// A webhook receiver on loopback (allowed by the test gateway's OUTBOUND_ALLOW_PRIVATE=127.0.0.0/8):
// records every request with its raw body and answers what the test says.
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type { WebhookEventPayload } from "../../sdk/src/index.js";

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A status, a status with response headers, or no answer at all. */
export type Answer = number | { status: number; headers: Record<string, string> } | "hang";

/** A webhook receiver on loopback: records every request and answers what `answer` says. */
export class Receiver {
  readonly received: Received[] = [];
  answer: (n: number, r: Received) => Answer = () => 200;
  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  static async start(port = 0): Promise<Receiver> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
    const receiver = new Receiver(server, (server.address() as AddressInfo).port);
    server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
        receiver.received.push(r);
        const answer = receiver.answer(receiver.received.length, r);
        if (typeof answer === "number") res.writeHead(answer).end();
        else if (answer !== "hang") res.writeHead(answer.status, answer.headers).end();
      });
    });
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Requests whose payload has this type (or any type). */
  events(type?: string): (Received & { event: WebhookEventPayload })[] {
    return this.received
      .map((r) => ({ ...r, event: JSON.parse(r.body) as WebhookEventPayload }))
      .filter((r) => type === undefined || r.event.type === type);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
