// `node --import ./test/support/network-stand-in.mjs dist/server/main.js`: the production build,
// started with nothing but its own settings, with the Baileys library's socket replaced by the
// tests' stand-in (test/support/baileys-stand-in.ts, built beside dist/) at module resolution.
// The gateway itself is not told (production refuses BAILEYS_SOCKET_MODULE): this stands where
// the network would be. Plain JavaScript, as the process runs without tsx.
import { register } from "node:module";
import { URL } from "node:url";
import { isMainThread } from "node:worker_threads";

const SHIM = new URL("./baileys-library-shim.mjs", import.meta.url).href;

/** Module hook: the engine's import of the library gets the shim; every other import is untouched. */
export async function resolve(specifier, context, next) {
  if (specifier === "@whiskeysockets/baileys" && context.parentURL?.endsWith("/server/engines/baileys/socket.js")) return { url: SHIM, shortCircuit: true };
  return next(specifier, context);
}

// The hooks run in a thread of their own, which loads this file again: register only once.
if (isMainThread) register(import.meta.url);
