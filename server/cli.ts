// The operator's command line: `npx svc-gateway <command>` or `npm run cli -- <command>`.
import { parseArgs } from "node:util";
import type { Config } from "./config.js";
import { openDatabase, type Database } from "./db/database.js";
import { createLogger } from "./logger.js";
import { WorkspaceService } from "./workspace/service.js";

const HELP = `svc-gateway: operator commands

Usage: svc-gateway <command> [options]

Commands:
  workspace create --name NAME --owner EMAIL [--plan PLAN]
                               create a workspace owned by EMAIL (plan default: pro)
  workspace set-plan WORKSPACE_ID PLAN
                               move a workspace to another plan
  plans list                   list the plans and their allowances
  migrate                      apply pending database migrations
  health                       ask the running gateway (BASE_URL) whether it is ready
  help                         this text

The database and every other setting come from the environment (see README.md).
`;

async function withDatabase<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, logger: createLogger("warn") });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

export async function runCli(argv: string[], config: Config): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: "string" }, owner: { type: "string" }, plan: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  const [command, sub, ...rest] = positionals;
  if (values.help || !command || command === "help") {
    console.log(HELP);
    return 0;
  }
  switch (`${command} ${sub ?? ""}`.trim()) {
    case "workspace create": {
      if (!values.name || !values.owner) return usage("workspace create needs --name and --owner");
      const ws = await withDatabase(config, (db) => new WorkspaceService(db.dataSource).create(values.name!, values.owner!, values.plan));
      console.log(JSON.stringify({ id: ws.id, name: ws.name, plan: ws.planId, owner: values.owner!.toLowerCase() }));
      return 0;
    }
    case "workspace set-plan": {
      const [id, plan] = rest;
      if (!id || !plan) return usage("workspace set-plan needs WORKSPACE_ID and PLAN");
      await withDatabase(config, (db) => new WorkspaceService(db.dataSource).setPlan(id, plan));
      console.log(JSON.stringify({ id, plan }));
      return 0;
    }
    case "plans list": {
      const plans = await withDatabase(config, (db) => new WorkspaceService(db.dataSource).plans());
      console.table(
        plans.map((p) => ({
          plan: p.id,
          connections: p.maxConnections ?? "unlimited",
          "messages/month": p.messagesPerMonth ?? "unlimited",
          scheduling: p.scheduling,
          "connection webhooks": p.connectionWebhooks,
          ai: p.ai,
          mcp: p.mcp,
          "member management": p.memberManagement,
        })),
      );
      return 0;
    }
    case "migrate": {
      await withDatabase(config, async () => undefined);
      console.log("migrations are up to date");
      return 0;
    }
    case "health": {
      const res = await fetch(`${config.baseUrl}/readyz`).catch(() => null);
      if (!res) {
        console.log(`not reachable: ${config.baseUrl}`);
        return 1;
      }
      console.log(`${res.status} ${await res.text()}`);
      return res.ok ? 0 : 1;
    }
    default:
      return usage(`unknown command: ${positionals.join(" ")}`);
  }
}

function usage(message: string): number {
  console.error(`${message}\n\n${HELP}`);
  return 64;
}
