// Fetching a message's media from the URL the sender gave, through the outbound address policy
// (server/outbound/address-policy.ts): the host resolved once and checked, the connection pinned to
// the checked address, no redirects followed, a size limit and one timeout for the whole fetch.
import * as http from "node:http";
import * as https from "node:https";
import type { Media } from "../../../contract/index.js";
import { checkWebhookUrl, type UrlCheckOptions } from "../../outbound/address-policy.js";
import { classifyError, pinnedLookup } from "../../outbound/safe-request.js";
import { EngineError } from "../engine.js";

/** The network's own ceiling for video and images is 16 MB; larger files are refused here. */
export const MEDIA_MAX_BYTES = 16 * 1024 * 1024;
export const MEDIA_TIMEOUT_MS = 30_000;

export interface FetchedMedia {
  data: Buffer;
  mimetype: string;
}

export interface MediaLimits {
  maxBytes?: number;
  timeoutMs?: number;
}

/** Fetches `media.url`; a refused or failed fetch is a permanent EngineError naming why. */
export async function fetchMedia(media: Media, policy: UrlCheckOptions, limits: MediaLimits = {}): Promise<FetchedMedia> {
  const maxBytes = limits.maxBytes ?? MEDIA_MAX_BYTES;
  const timeoutMs = limits.timeoutMs ?? MEDIA_TIMEOUT_MS;
  const check = await checkWebhookUrl(media.url, policy);
  if (!check.ok) throw new EngineError(`the media URL was refused: ${check.reason}`, true, check.kind === "dns" ? "media_fetch_failed" : "media_url_refused");
  const { address, family } = check.addresses[0]!;
  const url = check.url;
  return new Promise<FetchedMedia>((resolve, reject) => {
    const fail = (message: string, code = "media_fetch_failed") => {
      clearTimeout(timer);
      request.destroy();
      reject(new EngineError(message, true, code));
    };
    const timer = setTimeout(() => fail(`the media was not fetched within ${timeoutMs} ms`), timeoutMs);
    const request = (url.protocol === "https:" ? https : http).get(url, { agent: false, lookup: pinnedLookup(address, family) }, (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) return fail(`the media URL answered HTTP ${status}`);
      const declared = Number(res.headers["content-length"] ?? NaN);
      if (declared > maxBytes) return fail(`the media is ${declared} bytes; at most ${maxBytes} are accepted`, "media_too_large");
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return fail(`the media is larger than ${maxBytes} bytes`, "media_too_large");
        chunks.push(chunk);
      });
      res.on("end", () => {
        clearTimeout(timer);
        const type = (res.headers["content-type"] ?? "").split(";")[0]!.trim();
        resolve({ data: Buffer.concat(chunks), mimetype: media.mimetype ?? (type.length >= 3 ? type : "application/octet-stream") });
      });
      res.on("error", (err) => fail(`the media fetch broke off: ${err.message}`));
    });
    request.on("error", (err) => fail(`the media could not be fetched: ${classifyError(err).message}`));
  });
}
