// Structured logs (pino). Every path that can carry a credential is redacted at the source.
import { pino, type Logger } from "pino";

export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'res.headers["set-cookie"]',
  "*.authorization",
  "*.cookie",
  "*.password",
  "*.secret",
  "*.token",
  "*.key",
  "*.api_key",
  "*.code",
  "*.callback_token",
  "*.access_token",
  "*.refresh_token",
];

/**
 * An error as pino serializes it, with its `code` (ECONNREFUSED, a SQLSTATE such as 57P01, an API
 * problem code) as `error_code`: redaction runs after serializers, and `*.code` is redacted
 * because a sign-in code travels under that name.
 */
function serializeError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (out && (typeof out.code === "string" || typeof out.code === "number")) {
    out.error_code = out.code;
    delete out.code;
  }
  return out;
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    { level, redact: { paths: REDACT_PATHS, censor: "[redacted]" }, serializers: { err: serializeError }, base: { service: "svc-gateway" } },
    destination,
  );
}

export type { Logger };
