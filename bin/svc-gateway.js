#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx svc-gateway <command>` needs no build step.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("../server/cli.ts");
const { loadConfig, ConfigError } = await import("../server/config.ts");
try {
  process.exit(await runCli(process.argv.slice(2), loadConfig()));
} catch (err) {
  console.error(err instanceof ConfigError || err instanceof Error ? err.message : err);
  process.exit(1);
}
