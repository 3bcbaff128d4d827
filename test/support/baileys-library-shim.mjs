// What the gateway's engine imports as the Baileys library under test/support/network-stand-in.mjs:
// the library itself, except that its socket is the tests' stand-in.
import { createSocket } from "../../dist/test/support/baileys-stand-in.js";

export * from "@whiskeysockets/baileys";

let sockets = 0;

export default function makeWASocket(config) {
  return createSocket({ connectionId: `library-${++sockets}`, auth: config.auth, getMessage: config.getMessage, logger: config.logger });
}
