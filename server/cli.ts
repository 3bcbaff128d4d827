// The operator's command line: `npx svc-gateway <command>` or `npm run cli -- <command>`.
import { parseArgs } from "node:util";
import { z } from "zod";
import { ROLES, Role } from "../contract/common.js";
import type { Config } from "./config.js";
import { openDatabase, type Database } from "./db/database.js";
import { runningGateway } from "./db/data-dir-lock.js";
import { createLogger } from "./logger.js";
import { WorkspaceService } from "./workspace/service.js";

const HELP = `svc-gateway: operator commands

Usage: svc-gateway <command> [options]

Commands:
  workspace create --name NAME --owner EMAIL [--plan PLAN]
                               create a workspace owned by EMAIL (plan default: pro)
  workspace set-plan WORKSPACE_ID PLAN
                               move a workspace to another plan
  workspace list               every workspace with its plan and owners
  member add WORKSPACE_ID --email EMAIL --role ROLE
                               add a person to an existing workspace (ROLE: ${ROLES.join(", ")});
                               they sign in with a code mailed to EMAIL
  user set-email OLD_EMAIL NEW_EMAIL
                               change a person's sign-in address (e.g. the first owner's);
                               their sessions and open sign-in codes end
  plans list                   list the plans and their allowances
  migrate                      apply pending database migrations
  health                       ask the running gateway whether it is ready (the address in
                               DATA_DIR's pid file, else BASE_URL) and whether mail is failing
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
    options: {
      name: { type: "string" },
      owner: { type: "string" },
      plan: { type: "string" },
      email: { type: "string" },
      role: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
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
    case "workspace list": {
      const list = await withDatabase(config, (db) => new WorkspaceService(db.dataSource).listWithOwners());
      for (const ws of list) console.log(JSON.stringify(ws));
      return 0;
    }
    case "member add": {
      const [workspaceId] = rest;
      if (!workspaceId || !values.email || !values.role) return usage("member add needs WORKSPACE_ID, --email and --role");
      if (!isEmail(values.email)) return usage(`not an e-mail address: ${values.email}`);
      const role = Role.safeParse(values.role);
      if (!role.success) return usage(`unknown role ${values.role}: one of ${ROLES.join(", ")}`);
      const { memberId } = await withDatabase(config, (db) => new WorkspaceService(db.dataSource).addMember(workspaceId, values.email!, role.data));
      console.log(JSON.stringify({ id: memberId, workspace_id: workspaceId, email: values.email.toLowerCase(), role: role.data }));
      return 0;
    }
    case "user set-email": {
      const [from, to] = rest;
      if (!from || !to) return usage("user set-email needs OLD_EMAIL and NEW_EMAIL");
      if (!isEmail(to)) return usage(`not an e-mail address: ${to}`);
      const changed = await withDatabase(config, (db) => new WorkspaceService(db.dataSource).changeAddress(from, to));
      console.log(JSON.stringify({ user_id: changed.userId, email: to.toLowerCase(), workspaces: changed.workspaces }));
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
      // The gateway holding DATA_DIR says where it listens (embedded database); else BASE_URL.
      const url = runningGateway(config.dataDir)?.httpUrl ?? config.baseUrl;
      const res = await fetch(`${url}/readyz`).catch(() => null);
      if (!res) {
        console.log(`not reachable: ${url}`);
        return 1;
      }
      const text = await res.text();
      console.log(`${res.status} ${text} (${url})`);
      for (const warning of readyWarnings(text)) console.log(`warning: ${warning}`);
      return res.ok ? 0 : 1;
    }
    default:
      return usage(`unknown command: ${positionals.join(" ")}`);
  }
}

/** The `warnings` of a /readyz answer (mail failing); none when the body is not the gateway's JSON. */
function readyWarnings(body: string): string[] {
  try {
    const warnings = (JSON.parse(body) as { warnings?: unknown }).warnings;
    return Array.isArray(warnings) ? warnings.map(String) : [];
  } catch {
    return [];
  }
}

function isEmail(value: string): boolean {
  return z.string().email().safeParse(value).success;
}

function usage(message: string): number {
  console.error(`${message}\n\n${HELP}`);
  return 64;
}
