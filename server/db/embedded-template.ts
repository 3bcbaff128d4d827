// The embedded PostgreSQL's initial files, made once per installed PGlite version and copied into
// each new data directory. PGlite runs initdb inside WebAssembly when it opens an empty directory
// (or memory): about 12-15 s on a busy 2-core machine, the largest part of a first `npm start` and
// of every test process on the embedded database; loading the same files from this archive takes
// about 3 s (docs/performance.md, "Start-up"). `npm ci` makes it (the `prepare` script runs this
// file); a process that finds none runs initdb as before.
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PGlite } from "@electric-sql/pglite";

/** node_modules/.cache/svc-gateway/pglite-<version>-initdb.tar.gz: beside the package it was made by, and gone with it. */
export function templatePath(): string {
  // The package exports no package.json: its entry point, then up to the package's folder.
  const entry = fileURLToPath(import.meta.resolve("@electric-sql/pglite"));
  const marker = `${sep}node_modules${sep}`;
  const nodeModules = entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1);
  const manifest = join(nodeModules, "@electric-sql", "pglite", "package.json");
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  return join(nodeModules, ".cache", "svc-gateway", `pglite-${version}-initdb.tar.gz`);
}

/** The archive to start a new data directory from, when one has been made. */
export function initialFiles(): Blob | undefined {
  const file = templatePath();
  return existsSync(file) ? new Blob([readFileSync(file)]) : undefined;
}

/** Runs initdb once, in memory, and keeps the result. */
export async function makeTemplate(): Promise<string> {
  const file = templatePath();
  const db = await PGlite.create();
  try {
    const archive = Buffer.from(await (await db.dumpDataDir("gzip")).arrayBuffer());
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, archive);
    renameSync(tmp, file);
  } finally {
    await db.close();
  }
  return file;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const started = Date.now();
  const file = await makeTemplate();
  console.error(`embedded PostgreSQL: initial files made in ${((Date.now() - started) / 1000).toFixed(1)} s (${file})`);
}
