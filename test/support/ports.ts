// Ports for gateways the tests start on a port of their choosing (a child process is told its
// PORT; a restarted one keeps it).
import { createServer } from "node:net";
import { randomInt } from "node:crypto";

// Below Linux's default ephemeral range (32768-60999), from which every `listen(0)` of the run
// (webhook receivers, file servers, stand-ins) takes its port: a port picked here and released
// until the gateway binds it cannot be taken meanwhile by another test's server. (A file server
// once took a child gateway's port in that gap and answered its readiness probe.)
const LOW = 20_000;
const HIGH = 32_767;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 that nothing listens on now, outside the range other servers draw from. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = randomInt(LOW, HIGH + 1);
    if (await bindable(port)) return port;
  }
}
