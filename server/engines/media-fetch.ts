// Fetching media from a URL through the outbound address policy (server/outbound/address-policy.ts):
// the host resolved once and checked, the connection pinned to the checked address, no redirects
// followed, a size limit. Opened as a stream (the media route serves it without holding it whole);
// collected whole where an engine must hold it (the Baileys engine uploads what it sends).
import * as http from "node:http";
import * as https from "node:https";
import { Transform, type Readable } from "node:stream";
import { checkWebhookUrl, type UrlCheckOptions } from "../outbound/address-policy.js";
import { classifyError, pinnedLookup } from "../outbound/safe-request.js";
import { EngineError } from "./engine.js";

export interface OpenedMedia {
  /** The body; errors with an EngineError `media_too_large` once past the limit. */
  stream: Readable;
  /** The type the server declared, without parameters; null when it declared none. */
  contentType: string | null;
  /** The declared length, when there is one. */
  size: number | null;
}

export interface OpenMediaLimits {
  maxBytes: number;
  /** Until the answer's headers arrive, and then between two chunks. */
  timeoutMs: number;
}

/**
 * Opens `url`. EngineError codes: `media_url_refused` (the policy refused it), `media_gone` (the
 * server answered 404 or 410), `media_too_large` (declared or found past `maxBytes`),
 * `media_fetch_failed` (anything else); all permanent.
 */
export async function openMedia(url: string, policy: UrlCheckOptions, limits: OpenMediaLimits): Promise<OpenedMedia> {
  const check = await checkWebhookUrl(url, policy);
  if (!check.ok) throw new EngineError(`the media URL was refused: ${check.reason}`, true, check.kind === "dns" ? "media_fetch_failed" : "media_url_refused");
  const { address, family } = check.addresses[0]!;
  const target = check.url;
  return new Promise<OpenedMedia>((resolve, reject) => {
    const request = (target.protocol === "https:" ? https : http).get(target, { agent: false, lookup: pinnedLookup(address, family), timeout: limits.timeoutMs });
    const fail = (message: string, code = "media_fetch_failed") => {
      request.destroy();
      reject(new EngineError(message, true, code));
    };
    request.on("timeout", () => fail(`the media server did not answer within ${limits.timeoutMs} ms`));
    request.on("error", (err) => fail(`the media could not be fetched: ${classifyError(err).message}`));
    request.on("response", (res) => {
      const status = res.statusCode ?? 0;
      if (status === 404 || status === 410) return fail(`the media URL answered HTTP ${status}`, "media_gone");
      if (status < 200 || status > 299) return fail(`the media URL answered HTTP ${status}`);
      const declared = res.headers["content-length"] === undefined ? null : Number(res.headers["content-length"]);
      if (declared !== null && declared > limits.maxBytes) return fail(`the media is ${declared} bytes; at most ${limits.maxBytes} are served`, "media_too_large");
      const capped = capStream(res, limits.maxBytes);
      capped.on("close", () => request.destroy());
      const type = (res.headers["content-type"] ?? "").split(";")[0]!.trim();
      resolve({ stream: capped, contentType: type.length >= 3 ? type : null, size: declared });
    });
  });
}

/**
 * `source` passed through, failing with an EngineError `media_too_large` once past `maxBytes` (and
 * `media_fetch_failed` when the source breaks off).
 */
export function capStream(source: Readable, maxBytes: number): Readable {
  let size = 0;
  const capped = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > maxBytes) return done(new EngineError(`the media is larger than ${maxBytes} bytes`, true, "media_too_large"));
      done(null, chunk);
    },
  });
  source.on("error", (err) => capped.destroy(new EngineError(`the media fetch broke off: ${err.message}`, true, "media_fetch_failed")));
  // The reader learns of a failure from the stream itself (its iterator, its own listener): this
  // one only keeps a failure before it started reading from being an uncaught error.
  capped.on("error", () => undefined);
  capped.on("close", () => source.destroy());
  source.pipe(capped);
  return capped;
}

/** Collects an opened media's stream whole, failing past the limit or after `timeoutMs` in all. */
export async function collectMedia(opened: OpenedMedia, timeoutMs: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const timer = setTimeout(() => opened.stream.destroy(new EngineError(`the media was not fetched within ${timeoutMs} ms`, true, "media_fetch_failed")), timeoutMs);
  try {
    for await (const chunk of opened.stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } finally {
    clearTimeout(timer);
  }
}
