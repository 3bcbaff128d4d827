// One place for the primitives behind stored secrets: digests for what we only compare
// (keys, tokens, codes), authenticated encryption for what we must use again (signing secrets,
// vendor keys), HMAC for what we sign (cursors).
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export function sha256(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

export function hmac(key: Buffer, value: string): Buffer {
  return createHmac("sha256", key).update(value, "utf8").digest();
}

export function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** AES-256-GCM; output is `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export function encrypt(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", deriveKey(key, "encryption"), iv);
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return ["v1", iv, cipher.getAuthTag(), data].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
}

export function decrypt(key: Buffer, sealed: string): string {
  const [version, iv, tag, data] = sealed.split(".");
  if (version !== "v1" || !iv || !tag || data === undefined) throw new Error("unsupported ciphertext");
  const decipher = createDecipheriv("aes-256-gcm", deriveKey(key, "encryption"), Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
}

/** Separate keys per purpose, derived from SECRET_KEY, so a cursor signature can never be an encryption key. */
export function deriveKey(key: Buffer, purpose: string): Buffer {
  return createHmac("sha256", key).update(`svc-gateway:${purpose}`).digest();
}

/**
 * A short public id of a SECRET_KEY (16 hex characters of a purpose-derived digest, never the key
 * itself), stored beside what it sealed: after SECRET_KEY rotates, rows sealed under the old key are
 * recognised as such instead of failing decryption as if tampered with.
 */
export function keyId(key: Buffer): string {
  return deriveKey(key, "key-id").subarray(0, 8).toString("hex");
}
