// The operator's CLI, as `npx svc-gateway` runs it (from dist/ when the child gateways run from it:
// child-entry.ts), on the test run's database.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { testEnv } from "../setup.js";
import { cliEntry } from "./child-entry.js";

const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `svc-gateway <args>` with the test run's settings, `env` over them (undefined: unset). */
export async function cliWith(env: Record<string, string | undefined>, ...args: string[]): Promise<CliResult> {
  const merged: Record<string, string | undefined> = { PATH: process.env.PATH ?? "", DATABASE_URL: testEnv().databaseUrl, DATA_DIR: testEnv().dataDir, BASE_URL: testEnv().baseUrl, ...env };
  const defined = Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined));
  try {
    const { stdout, stderr } = await run(process.execPath, [...cliEntry(), ...args], { env: defined });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export function cli(...args: string[]): Promise<CliResult> {
  return cliWith({}, ...args);
}
