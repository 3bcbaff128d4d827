// A MongoDB-wire-compatible emulator (jongodb, a native binary from the npm package
// @jongodb/memory-server-bin-linux-x64-gnu), not MongoDB: no mongod can be installed here. CI
// installs it outside the repository and names the binary in TEST_MONGO_EMULATOR. Its locking is
// not atomic across processes, so one job runner (one gateway process) per emulator.
import { spawn, type ChildProcess } from "node:child_process";

export interface MongoEmulator {
  /** mongodb://127.0.0.1:<port>/jobs */
  url: string;
  process: ChildProcess;
  stop(): void;
}

export function mongoEmulatorBinary(): string | undefined {
  return process.env.TEST_MONGO_EMULATOR || undefined;
}

export async function startMongoEmulator(binary: string): Promise<MongoEmulator> {
  const child = spawn(binary, ["--host=127.0.0.1", "--port=0", "--database=jobs"], { stdio: ["ignore", "pipe", "pipe"] });
  const stop = () => void child.kill("SIGKILL");
  // A mocha worker ends with process.exit: the emulator must not outlive it.
  process.once("exit", stop);
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the MongoDB-wire emulator did not start within 30 s:\n${out}`)), 30_000);
    const read = (d: Buffer) => {
      out += d.toString();
      const found = /^JONGODB_URI=(\S+)$/m.exec(out)?.[1];
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the MongoDB-wire emulator exited ${code}:\n${out}`));
    });
  });
  return { url, process: child, stop };
}
