// Fetching a message's media from the URL the sender gave, through the outbound address policy
// (server/engines/media-fetch.ts): a size limit and one timeout for the whole fetch.
import type { Media } from "../../../contract/index.js";
import type { UrlCheckOptions } from "../../outbound/address-policy.js";
import { collectMedia, openMedia } from "../media-fetch.js";

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
  const opened = await openMedia(media.url, policy, { maxBytes, timeoutMs });
  const data = await collectMedia(opened, timeoutMs);
  return { data, mimetype: media.mimetype ?? opened.contentType ?? "application/octet-stream" };
}
