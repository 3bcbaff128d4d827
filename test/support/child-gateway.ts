// A second gateway process on the test run's database, started the way an operator starts one
// (`tsx server/main.ts` with environment variables), so tests can kill it mid-work or run it
// with settings of its own.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STAND_IN_MODULE, testEnv } from "../setup.js";

export interface ChildGateway {
  url: string;
  process: ChildProcess;
  /** SIGKILL: no shutdown, no cleanup, as a crash or an OOM kill. */
  kill(): Promise<void>;
  /** SIGTERM: the graceful shutdown path. Resolves with the exit code. */
  terminate(): Promise<number | null>;
  output(): string;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startChildGateway(env: Record<string, string> = {}): Promise<ChildGateway> {
  const port = await freePort();
  const { databaseUrl, gateway } = testEnv();
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH ?? "",
      NODE_ENV: "test",
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      DATA_DIR: mkdtempSync(join(tmpdir(), "svc-gateway-child-")),
      // Same key as the test gateway: callback tokens and cursors must agree across processes.
      SECRET_KEY: gateway.ctx.config.secretKey.toString("base64"),
      LOG_LEVEL: "info",
      BAILEYS_SOCKET_MODULE: STAND_IN_MODULE,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`child gateway exited ${child.exitCode}:\n${out}`);
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok).catch(() => false);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`child gateway not ready within 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    url,
    process: child,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async terminate() {
      child.kill("SIGTERM");
      return exited;
    },
    output: () => out,
  };
}
