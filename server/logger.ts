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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: "[redacted]" }, base: { service: "svc-gateway" } }, destination);
}

export type { Logger };
