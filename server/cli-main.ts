// The CLI's process entry, as server/main.ts is the gateway's: `bin/svc-gateway.js` loads it from
// the sources through tsx, and the production build has it as `node dist/server/cli-main.js`.
import { ConfigError, loadConfig } from "./config.js";
import { runCli } from "./cli.js";

try {
  process.exit(await runCli(process.argv.slice(2), loadConfig()));
} catch (err) {
  console.error(err instanceof ConfigError || err instanceof Error ? err.message : err);
  process.exit(1);
}
