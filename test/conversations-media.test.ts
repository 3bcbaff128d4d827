// GET /v1/messages/{id}/media over real HTTP: a contact's photo, kept by the (simulated) network at
// a URL, fetched through the outbound address policy and streamed to the caller as it arrives,
// with its type and file name; the size cap (MEDIA_MAX_BYTES, 256 KiB in tests) at its edges,
// 404 without media, 410 once the network no longer has it.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { testEnv } from "./setup.js";
import { http } from "./support/actors.js";
import { inboundFrom, linkedConnection, uniquePhone, type Linked } from "./support/conversations.js";

const CAP = 256 * 1024;

describe("conversation media", () => {
  let c: Linked;
  let server: Server;
  let base: string;
  /** Releases the second half of /slow once the test has read the first. */
  let releaseSlow: () => void = () => undefined;

  before(async () => {
    expect(testEnv().gateway.ctx.config.mediaMaxBytes).to.equal(CAP);
    c = await linkedConnection();
    server = createServer((req, res: ServerResponse) => {
      const url = new URL(req.url!, "http://x");
      const size = Number(url.searchParams.get("size") ?? 0);
      if (url.pathname === "/photo.jpg") return void res.writeHead(200, { "content-type": "image/jpeg", "content-length": String(size) }).end(Buffer.alloc(size, 7));
      // No declared length: the cap is found while streaming.
      if (url.pathname === "/chunked") {
        res.writeHead(200, { "content-type": "application/pdf" });
        res.write(Buffer.alloc(size - 1, 1));
        return void setTimeout(() => res.end(Buffer.alloc(1, 2)), 20);
      }
      if (url.pathname === "/slow") {
        res.writeHead(200, { "content-type": "audio/ogg", "content-length": "2000" });
        res.write(Buffer.alloc(1000, 3));
        return void new Promise<void>((r) => (releaseSlow = r)).then(() => res.end(Buffer.alloc(1000, 4)));
      }
      if (url.pathname === "/expired") return void res.writeHead(Number(url.searchParams.get("status") ?? 404)).end();
      res.writeHead(500).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    releaseSlow();
    server.closeAllConnections();
    server.close();
  });

  const auth = () => ({ authorization: `Bearer ${c.key}` });
  const photo = (url: string, extra: Record<string, unknown> = {}) => ({ media: { url, kind: "image", ...extra } });

  it("streams a contact's photo with its type and file name, byte for byte", async () => {
    const inbound = await inboundFrom(c, uniquePhone(), photo(`${base}/photo.jpg?size=5000`, { mimetype: "image/jpeg", filename: "receipt é.jpg" }));
    const res = await fetch(`${testEnv().baseUrl}/v1/messages/${inbound.id}/media`, { headers: auth() });
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("image/jpeg");
    expect(res.headers.get("content-disposition")).to.equal(`attachment; filename="receipt _.jpg"; filename*=UTF-8''receipt%20%C3%A9.jpg`);
    expect(res.headers.get("cache-control")).to.equal("no-store");
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.equals(Buffer.alloc(5000, 7))).to.equal(true);
  });

  it("serves the first bytes before the network has sent the rest: streamed, not held whole", async () => {
    const inbound = await inboundFrom(c, uniquePhone(), { media: { url: `${base}/slow`, kind: "audio" } });
    const res = await fetch(`${testEnv().baseUrl}/v1/messages/${inbound.id}/media`, { headers: auth() });
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("audio/ogg");
    const reader = res.body!.getReader();
    let got = 0;
    while (got < 1000) got += (await reader.read()).value!.length;
    expect(got).to.equal(1000);
    releaseSlow();
    for (let r = await reader.read(); !r.done; r = await reader.read()) got += r.value.length;
    expect(got).to.equal(2000);
  });

  it("serves media of exactly MEDIA_MAX_BYTES and refuses one byte more: 413 when declared, a cut download when found while streaming", async () => {
    const exact = await inboundFrom(c, uniquePhone(), photo(`${base}/photo.jpg?size=${CAP}`));
    const ok = await fetch(`${testEnv().baseUrl}/v1/messages/${exact.id}/media`, { headers: auth() });
    expect(ok.status).to.equal(200);
    expect((await ok.arrayBuffer()).byteLength).to.equal(CAP);

    const over = await inboundFrom(c, uniquePhone(), photo(`${base}/photo.jpg?size=${CAP + 1}`));
    const refused = await http("GET", `/v1/messages/${over.id}/media`, { headers: auth() });
    expect(refused.status).to.equal(413);
    expect(refused.json.code).to.equal("media_too_large");

    const chunkedOk = await inboundFrom(c, uniquePhone(), { media: { url: `${base}/chunked?size=${CAP}`, kind: "document" } });
    const whole = await fetch(`${testEnv().baseUrl}/v1/messages/${chunkedOk.id}/media`, { headers: auth() });
    expect((await whole.arrayBuffer()).byteLength).to.equal(CAP);
    const chunkedOver = await inboundFrom(c, uniquePhone(), { media: { url: `${base}/chunked?size=${CAP + 1}`, kind: "document" } });
    const cut = await fetch(`${testEnv().baseUrl}/v1/messages/${chunkedOver.id}/media`, { headers: auth() });
    expect(cut.status).to.equal(200);
    let failed = false;
    try {
      await cut.arrayBuffer();
    } catch {
      failed = true;
    }
    expect(failed, "a download past the cap must break off, not look complete").to.equal(true);
  });

  it("answers 404 for a message without media, 410 when the network no longer has it, 409 for an address the policy refuses", async () => {
    const text = await inboundFrom(c, uniquePhone());
    const none = await http("GET", `/v1/messages/${text.id}/media`, { headers: auth() });
    expect(none.status).to.equal(404);
    expect(none.json.detail).to.match(/has none/);
    for (const status of [404, 410]) {
      const expired = await inboundFrom(c, uniquePhone(), photo(`${base}/expired?status=${status}`));
      const gone = await http("GET", `/v1/messages/${expired.id}/media`, { headers: auth() });
      expect(gone.status).to.equal(410);
      expect(gone.json.code).to.equal("gone");
    }
    const privateUrl = await inboundFrom(c, uniquePhone(), photo("http://10.1.2.3/photo.jpg"));
    const refused = await http("GET", `/v1/messages/${privateUrl.id}/media`, { headers: auth() });
    expect(refused.status).to.equal(409);
    expect(refused.json.detail).to.match(/refused/);
    expect((await http("GET", `/v1/messages/msg_nothing/media`, { headers: auth() })).status).to.equal(404);
  });

  it("needs messages:read", async () => {
    const inbound = await inboundFrom(c, uniquePhone(), photo(`${base}/photo.jpg?size=10`));
    const { key } = await c.ws.key(["connections:read"]);
    const res = await http("GET", `/v1/messages/${inbound.id}/media`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).to.equal(403);
  });
});
