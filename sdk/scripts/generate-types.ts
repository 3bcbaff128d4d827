// Writes sdk/src/types.gen.ts: the SDK's public types as plain TypeScript, printed by the
// compiler from the contract's inferred types. A consumer then type-checks against ~200 KB of
// object types instead of instantiating ts-rest's client type over every zod schema of the
// contract (seconds and ~800 MB per compilation). The contract stays the only source: this
// file is regenerated from it (`npm run types -w sdk`), test/sdk-types.test.ts fails when the
// committed copy is stale, and test/sdk-types.check.ts proves at compile time that every
// generated route type equals what ts-rest infers from the contract.
//
//   tsx sdk/scripts/generate-types.ts [--check]
import { isAppRoute, type AppRoute, type AppRouter } from "@ts-rest/core";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { ZodDiscriminatedUnion, ZodEnum, ZodObject, ZodType, ZodUnion } from "zod";
import * as exported from "../../contract/index.js";

const srcDir = join(dirname(fileURLToPath(import.meta.url)), "..", "src");
const outFile = join(srcDir, "types.gen.ts");

/** Export name → type name, as in the OpenAPI document's components. */
const RENAMED: Record<string, string> = { TimelineEntry: "MessageTimelineEntry", WorkspaceOverview: "Workspace", ScopeSchema: "Scope" };
// Schemas a caller writes (bodies, queries) are inputs (defaults optional); the rest are outputs.
const INPUT = /(Body|Query|Params|Headers)$/;

function namedSchemas(): { name: string; exportName: string; input: boolean }[] {
  const out: { name: string; exportName: string; input: boolean }[] = [];
  for (const [exportName, value] of Object.entries(exported)) {
    if (!(value instanceof ZodType)) continue;
    if (!(value instanceof ZodObject || value instanceof ZodEnum || value instanceof ZodUnion || value instanceof ZodDiscriminatedUnion)) continue;
    out.push({ name: RENAMED[exportName] ?? exportName, exportName, input: INPUT.test(exportName) });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

function routes(router: AppRouter, path: string[] = []): { path: string[]; route: AppRoute }[] {
  return Object.entries(router).flatMap(([key, entry]) =>
    isAppRoute(entry) ? [{ path: [...path, key], route: entry }] : routes(entry as AppRouter, [...path, key]),
  );
}

const CALL_OPTIONS = ["fetchOptions", "overrideClientOptions", "cache", "next", "extraHeaders"].map((k) => JSON.stringify(k)).join(" | ");

function generate(): string {
  const named = namedSchemas();
  const all = routes(exported.contract);
  const alias = (key: string) => `T_${key.replace(/\W/g, "_")}`;

  // A scratch module in the SDK's folder (so that imports resolve as the SDK's own do) whose
  // aliases the checker expands into plain types. Not inside src/: a file made and removed there
  // would make src/ look changed to what rebuilds from it (the dashboard, dist/ for the tests).
  const probe = join(srcDir, "..", `.types-probe-${process.pid}.ts`);
  const lines = [
    `import type { z } from "zod";`,
    `import type { ClientInferResponses, PartialClientInferRequest } from "@ts-rest/core";`,
    `import type * as C from "../contract/index.js";`,
    `import type { SvcClientArgs } from "./src/client-args.js";`,
    // Forces the checker to print zod's helper types (passthrough objects) as plain object types.
    `type Plain<T> = T extends Headers | Blob ? T : T extends readonly (infer U)[] ? Plain<U>[] : T extends object ? { [K in keyof T]: Plain<T[K]> } : T;`,
    ...named.map((n) => `export type ${alias(n.name)} = Plain<z.${n.input ? "input" : "output"}<typeof C.${n.exportName}>>;`),
    `export type ${alias("WebhookEvent")} = C.WebhookEvent;`,
    ...all.flatMap(({ path }) => {
      const route = `C.Contract${path.map((p) => `[${JSON.stringify(p)}]`).join("")}`;
      const key = path.join(".");
      return [
        `export type ${alias(`req.${key}`)} = Plain<Omit<PartialClientInferRequest<${route}, SvcClientArgs>, ${CALL_OPTIONS}>>;`,
        `export type ${alias(`res.${key}`)} = Plain<ClientInferResponses<${route}>>;`,
      ];
    }),
  ];
  writeFileSync(probe, lines.join("\n"));
  try {
    const program = ts.createProgram([probe], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      skipLibCheck: true,
      types: ["node"],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(probe));
    if (diagnostics.length > 0) throw new Error(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => srcDir, getNewLine: () => "\n" }));
    const checker = program.getTypeChecker();
    const types = new Map<string, ts.Type>();
    for (const statement of program.getSourceFile(probe)!.statements) {
      if (ts.isTypeAliasDeclaration(statement)) types.set(statement.name.text, checker.getTypeAtLocation(statement.name));
    }
    const print = (key: string) => checker.typeToString(types.get(alias(key))!, undefined, ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias);
    // Responses name the output types they contain (`body: Message`) instead of repeating them.
    const outputs = named
      .filter((n) => !n.input)
      .map((n) => ({ name: n.name, text: print(n.name) }))
      .filter((n) => n.text.length > 40)
      .sort((a, b) => b.text.length - a.text.length);
    const printResponses = (key: string) => outputs.reduce((text, n) => text.split(n.text).join(n.name), print(key));
    const allOptional = (key: string) =>
      checker.getPropertiesOfType(types.get(alias(key))!).every((p) => (p.flags & ts.SymbolFlags.Optional) !== 0);

    const out: string[] = [
      "// Generated by sdk/scripts/generate-types.ts from the contract (`npm run types -w sdk`): do not edit.",
      "// test/sdk-types.check.ts proves these equal the types ts-rest infers from the contract.",
      `import type { CallOptions } from "./call-options.js";`,
      "",
      ...named.map((n) => `export type ${n.name} = ${print(n.name)};`),
      `export type WebhookEvent = ${print("WebhookEvent")};`,
      "",
      "/** The typed client: one method per route, answering `{status, body, headers}` typed per status. */",
      "export interface SvcClient {",
    ];
    const groups = new Map<string, { path: string[]; route: AppRoute }[]>();
    for (const r of all) groups.set(r.path[0]!, [...(groups.get(r.path[0]!) ?? []), r]);
    for (const [group, members] of groups) {
      out.push(`  ${group}: {`);
      for (const { path, route } of members) {
        const key = path.join(".");
        out.push(`    /** ${route.method} ${route.path}: ${route.summary ?? ""} */`);
        out.push(`    ${path[1]}: (args${allOptional(`req.${key}`) ? "?" : ""}: ${print(`req.${key}`)} & CallOptions) => Promise<${printResponses(`res.${key}`)}>;`);
      }
      out.push("  };");
    }
    out.push("}", "");
    return out.join("\n");
  } finally {
    rmSync(probe, { force: true });
  }
}

const text = generate();
if (process.argv.includes("--check")) {
  const committed = readFileSync(outFile, "utf8");
  if (committed !== text) {
    process.stderr.write("sdk/src/types.gen.ts is stale: run `npm run types -w sdk`\n");
    process.exit(1);
  }
} else {
  writeFileSync(outFile, text);
  process.stdout.write(`wrote ${outFile}\n`);
}
